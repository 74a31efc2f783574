"""The long summaries' softmax and reductions over one block of scores, in one read of each row (numba): the
row's weights (written for the weights x values product), its entropy, the block's weights summed and maximised
over each tile row (the pooled grid), and, for a causal layer, the weights summed by distance. Done with torch,
the softmax and each reduction is its own pass over the block (tens of MB at 8,192 tokens, beyond the cache);
here a row (at most 32 KB at 8,192 keys) is read from memory once and the rest of its work reads it from the
cache.

The exponential is computed in the loop so that it is vectorised (long/rowkernel.py)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from attnviz import compiled
from attnviz.runtime import configure_threads


@lru_cache(maxsize=None)
def _kernel():
    """The compiled loop (long/rowkernel.py), imported once numba has its thread count and threading layer."""
    compiled.numba()
    from attnviz.long.rowkernel import softmax_rows

    return softmax_rows


def _chunks(row_tile: np.ndarray, heads: int, split: int | None) -> tuple[np.ndarray, int]:
    """(each row's chunk, chunks per tile row): every tile row cut into `split` near-equal runs of rows, by
    default as many as share the heads x chunks evenly among the threads (nine heads on two threads would idle
    one thread for a ninth of the time), and at least two tasks a thread."""
    R = int(row_tile.max()) + 1
    if split is None:
        threads, split = configure_threads(), 1
        while (heads * R * split) % threads or heads * R * split < 2 * threads:
            split += 1
    starts = np.searchsorted(row_tile, np.arange(R))  # row_tile is sorted
    counts = np.diff(np.append(starts, len(row_tile)))
    within = np.arange(len(row_tile)) - starts[row_tile]
    return row_tile * split + (within * split) // counts[row_tile], split


def softmax_block(s, w, row_tile: np.ndarray, counted: np.ndarray | None, base: int, split: int | None = None):
    """The softmax of a block of scores written into w, and (entropy nats (head, B), tile-row sums (head, R, K),
    tile-row maxima (head, R, K), distance sums (head, D) or None) of its weights: s and w torch float32 (head,
    B, K) contiguous, scores of rows q0.. over keys k0.. (hidden keys a large negative number) and the tensor to
    write; row_tile (B,) each row's tile row in the block (0..R-1, ascending); counted (B,) bool, the rows the
    distance sums count, or None for no distance sums (they are a causal layer's: D = q0 + B - k0 distances,
    from 0); base = q0 - k0. split: rows of each tile row cut into this many chunks (default: see _chunks)."""
    H, B, K = s.shape
    chunk, split = _chunks(np.asarray(row_tile, np.int64), H, split)
    C = int(chunk.max()) + 1
    R = -(-C // split)
    sums, maxes = np.zeros((H, R * split, K), np.float32), np.zeros((H, R * split, K), np.float32)
    nats = np.empty((H, B), np.float32)
    D = base + B if counted is not None else 0
    rev = np.zeros((R * split, H, D), np.float32)
    compiled.threads()
    _kernel()(s.numpy(), w.numpy(), np.ascontiguousarray(chunk, np.int64),
              np.ones(B, np.bool_) if counted is None else np.ascontiguousarray(counted, np.bool_), int(base),
              sums, maxes, nats, rev)
    if split > 1:
        sums = sums.reshape(H, R, split, K).sum(2)
        maxes = maxes.reshape(H, R, split, K).max(2)
    return nats, sums, maxes, (rev.sum(0)[:, ::-1] if counted is not None else None)
