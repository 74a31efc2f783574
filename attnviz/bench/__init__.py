"""`python -m attnviz.bench`: the performance figures each issue names."""
from __future__ import annotations

import time


def seconds(fn) -> float:
    """Wall-clock seconds of one call of fn()."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
