"""Compiled loops (numba) for the passes that torch's operations would make go through memory several times:
numba imported with as many threads as torch, and arrays on the boundary the loops' vector loads want."""
from __future__ import annotations

import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from attnviz.runtime import configure_threads

ALIGN = 64  # bytes: one 512-bit vector, one cache line
# the smallest normal float32: the loops set weights below it to 0, since arithmetic on denormal numbers is slow
TINY = np.float32(1.1754944e-38)


@lru_cache(maxsize=None)
def numba():
    """numba, with as many threads as torch (runtime.configure_threads) and a threading layer that pages of
    several sessions may call at once (OpenMP or TBB). numba's OpenMP threads start with its thread count set
    as the process's OpenMP default, which torch shares: the two counts must agree before numba is imported."""
    threads = configure_threads()
    # numba reads its settings again from the environment before each compilation, and refuses a thread count
    # other than its pool's: once numba is imported (by the caller), its environment is left as it is, and
    # threads() sets the count per call
    if "numba" not in sys.modules:
        os.environ.setdefault("NUMBA_NUM_THREADS", str(threads))
        _wide_vectors()
    drop_stale_cache()
    import numba as nb

    if nb.config.THREADING_LAYER == "default":
        nb.config.THREADING_LAYER = "threadsafe"
    return nb


# the modules whose functions and constants the loops take in when compiled (inlined: not a call at run time)
INLINED = ("vecmath.py", "compiled.py")
STAMP = Path(__file__).resolve().parent / "__pycache__" / "compiled-loops.stamp"


def drop_stale_cache() -> bool:
    """Remove the package's compiled loops from numba's on-disk cache when a module they take in (INLINED) changed
    since they were cached; True if it did. numba keys a cached loop by its own source file only, so a changed log
    or exponential in vecmath.py would otherwise go on running in its old form in every loop cached before."""
    root = STAMP.parent.parent
    digest = hashlib.sha256(b"".join((root / name).read_bytes() for name in INLINED)).hexdigest()
    try:
        if STAMP.read_text(encoding="ascii") == digest:
            return False
    except OSError:
        pass
    try:
        for cached in (*root.rglob("__pycache__/*.nbi"), *root.rglob("__pycache__/*.nbc")):
            cached.unlink(missing_ok=True)
        STAMP.parent.mkdir(exist_ok=True)
        STAMP.write_text(digest, encoding="ascii")
    except OSError:  # a package installed read-only: numba keeps its cache elsewhere
        return False
    return True


def _wide_vectors() -> None:
    """On a CPU with AVX-512, let the loops vectorise over 512-bit registers. LLVM's tuning for Intel's server cores
    prefers 256-bit vectors (a whole-core frequency drop on the first of them); for these loops, which spend their
    time in multiply-adds over rows held in cache, 16 lanes instead of 8 took ALTI's pass over a 512-token layer from
    about 40 to 30 ms here (an Emerald Rapids core, numba's default gave no zmm register at all). Set before numba
    is imported, from the host's own name and features, unless NUMBA_CPU_NAME or NUMBA_CPU_FEATURES is set already;
    numba's on-disk cache keeps code per CPU name and features."""
    if "NUMBA_CPU_NAME" in os.environ or "NUMBA_CPU_FEATURES" in os.environ:
        return
    import llvmlite.binding as ll

    features = ll.get_host_cpu_features()
    if not features.get("avx512f"):
        return
    os.environ["NUMBA_CPU_NAME"] = ll.get_host_cpu_name()
    os.environ["NUMBA_CPU_FEATURES"] = features.flatten() + ",-prefer-256-bit"


def threads():
    """numba's thread count in the calling thread (its setting is per thread), as torch's."""
    nb = numba()
    nb.set_num_threads(min(configure_threads(), nb.config.NUMBA_NUM_THREADS))


def aligned(shape, values=None) -> np.ndarray:
    """A C-contiguous float32 array at a 64-byte boundary holding `values` (copied only when they are not so
    already), or zeros: the loops load whole 64-byte vectors, and numpy's own boundary is 16 bytes.

    Its memory is written here, by the calling thread, before any compiled loop writes to it: numpy asks the kernel
    for huge pages for large arrays, and two threads taking a new array's first huge pages at once are slow. Measured
    here, 75 MB first written by numba's two threads took 74 ms, by one thread 11 ms (3 ms once its pages were
    mapped)."""
    if (values is not None and values.dtype == np.float32 and values.flags.c_contiguous
            and values.ctypes.data % ALIGN == 0):
        return values
    raw = np.empty(int(np.prod(shape)) * 4 + ALIGN, np.uint8)
    start = -raw.ctypes.data % ALIGN
    out = raw[start:start + int(np.prod(shape)) * 4].view(np.float32).reshape(shape)
    out[...] = 0 if values is None else values
    return out
