"""The `attnviz` command: `attnviz run` serves the app, `attnviz bench` prints the figures,
`attnviz atlas ...` runs a corpus into a head-atlas store, `attnviz compile` compiles the app's loops."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

USAGE = """usage: attnviz COMMAND [ARGS]

commands:
  run [--port N] [streamlit options]   serve the app on http://127.0.0.1:8501 (offline models by default)
  bench [--json] [--quick] [--load]    print the performance figures
  atlas --out DIR [--model M] ...      run every head over a corpus into a store (attnviz atlas --help)
  compile                              compile the app's loops into numba's on-disk cache (make setup runs it)
"""

# the head counts of the packaged models (MiniLM 12, SmolLM2 9): the contributions' pair loop is compiled per count
PACKAGED_HEADS = (12, 9)


def app_file() -> Path:
    """app.py of the checkout this package is installed from (an editable install)."""
    return Path(__file__).resolve().parent.parent / "app.py"


def run_app(argv: list[str]) -> int:
    """`streamlit run app.py` on the loopback address, headless, offline unless HF_HUB_OFFLINE says otherwise."""
    app = app_file()
    if not app.is_file():
        print(f"attnviz run needs the app's files beside the package (looked for {app}): "
              "install the checkout with `pip install -e .`.", file=sys.stderr)
        return 2
    port = "8501"
    rest = list(argv)
    if "--port" in rest:
        i = rest.index("--port")
        if i + 1 >= len(rest) or not rest[i + 1].isdigit():
            print("--port needs a number, e.g. attnviz run --port 8502", file=sys.stderr)
            return 2
        port = rest[i + 1]
        del rest[i:i + 2]
    env = {**os.environ}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", "127.0.0.1",
           "--server.port", port, "--server.headless", "true", *rest]
    return subprocess.call(cmd, cwd=app.parent, env=env)


def compile_loops() -> int:
    """Compile every compiled loop the pages use, on tiny inputs of the types the pages pass, into numba's on-disk
    cache: a page then loads it (a fraction of a second) instead of compiling it (the analysis's pass alone took
    3.7 s here, longer with other work on the cores)."""
    import time

    import numpy as np
    import torch

    from attnviz.contrib.pairs import pairs, spread
    from attnviz.long.rowpass import softmax_block
    from attnviz.metrics.analysis import head_pass

    t0 = time.perf_counter()
    weights = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    weights.flags.writeable = False  # as a result's attention is: read-only arrays are a type of their own
    head_pass(weights, None, np.full(3, 1 / 3, np.float32))
    spread(weights[0], np.ones((2, 3), np.float32))  # a Contributions' weights are read-only too
    for heads in PACKAGED_HEADS:
        _, key_major = spread(np.full((heads, 3, 3), 1 / 3, np.float32), np.ones((heads, 3), np.float32))
        pairs(key_major, np.ones((heads, 3, 4), np.float32), np.ones((3, heads, heads), np.float32),
              np.ones((3, 4), np.float32))
    scores = torch.zeros((2, 4, 4))
    softmax_block(scores, torch.empty_like(scores), np.zeros(4, np.int64), np.ones(4, bool), 0)
    print(f"compiled loops ready in {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "run":
        return run_app(rest)
    if command == "bench":
        from attnviz.bench.run import main as bench_main

        return bench_main(rest) or 0
    if command == "compile":
        return compile_loops()
    if command == "atlas":
        from attnviz.atlas.__main__ import main as atlas_main

        return atlas_main(rest) or 0
    print(f"Unknown command {command!r}.\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
