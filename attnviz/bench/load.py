"""smollm2_load_s_first, smollm2_load_s_again: seconds to load the packaged SmolLM2 in a fresh process, first from
its GGUF file (converted into the user's cache on the way) and then again from that converted copy. Both run
against a cache folder of their own, so the user's cache is neither used nor changed; a process's start and its
imports are not counted."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

_CHILD = """
import time
from attnviz.models import load_model
t0 = time.perf_counter()
load_model("smollm2")
print(time.perf_counter() - t0)
"""


def _load_seconds(cache: str) -> float:
    env = {**os.environ, "ATTNVIZ_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=1800,
                          check=True)
    return float(done.stdout.strip().splitlines()[-1])


def figures(quick: bool = False) -> dict[str, float]:
    from attnviz.models.registry import installed

    if not installed("smollm2"):
        return {}
    with tempfile.TemporaryDirectory(prefix="attnviz-bench-cache-") as cache:
        first = _load_seconds(cache)
        again = _load_seconds(cache)
    return {"smollm2_load_s_first": first, "smollm2_load_s_again": again}


if __name__ == "__main__":
    for name, value in figures().items():
        print(f"{name} = {value:.4g}")
