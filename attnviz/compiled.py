"""Compiled loops (numba) for the passes that torch's operations would make go through memory several times:
numba imported with as many threads as torch, and arrays on the boundary the loops' vector loads want."""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

from attnviz.runtime import configure_threads

ALIGN = 64  # bytes: one 512-bit vector, one cache line


@lru_cache(maxsize=None)
def numba():
    """numba, with as many threads as torch (runtime.configure_threads) and a threading layer that pages of
    several sessions may call at once (OpenMP or TBB). numba's OpenMP threads start with its thread count set
    as the process's OpenMP default, which torch shares: the two counts must agree before numba is imported."""
    threads = configure_threads()
    os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
    import numba as nb

    if nb.config.THREADING_LAYER == "default":
        nb.config.THREADING_LAYER = "threadsafe"
    return nb


def threads():
    """numba's thread count in the calling thread (its setting is per thread), as torch's."""
    nb = numba()
    nb.set_num_threads(min(configure_threads(), nb.config.NUMBA_NUM_THREADS))


def aligned(shape, values=None) -> np.ndarray:
    """A C-contiguous float32 array at a 64-byte boundary (holding `values` if given, copied only when they are
    not so already): the loops load whole 64-byte vectors, and numpy's own boundary is 16 bytes."""
    if (values is not None and values.dtype == np.float32 and values.flags.c_contiguous
            and values.ctypes.data % ALIGN == 0):
        return values
    raw = np.empty(int(np.prod(shape)) * 4 + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    out = raw[start:start + int(np.prod(shape)) * 4].view(np.float32).reshape(shape)
    if values is not None:
        out[...] = values
    return out
