"""The long summaries' reductions over one block of weights in one read of each row (numba): the row's largest
score and weight and sum_j p_j s_j (its entropy), the block's weights summed and maximised over each tile row (the
pooled grid), and, for a causal layer, the weights summed by distance. Done with torch, each is its own pass over
the block (tens of MB at 8,192 tokens, beyond the cache); here a row is read from memory once and the rest of its
work reads it from the cache."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from attnviz import compiled
from attnviz.runtime import configure_threads


@lru_cache(maxsize=None)
def _kernel():
    nb = compiled.numba()

    @nb.njit(parallel=True, fastmath=True, cache=True)
    def run(s, w, row_tile, counted, base, sums, maxes, stats, rev):
        # s, w (head, B, K): scores and weights; row_tile (B,): each row's tile row in the block; counted (B,): rows
        # the distance sums count; base = q0 - k0; sums, maxes (head, R, K) zeros. The keys are cut into P parts
        # (the threads share the heads x parts): stats (P, 3, head, B) each part's largest score, largest weight
        # and sum_j w s; rev (P, head, D) zeros: rev[p, h, D-1-d] += part p's weight at distance d, or D = 0
        H, B, K = s.shape
        P, _, D = rev.shape
        size = (K + P - 1) // P
        for task in nb.prange(H * P):
            h = task // P
            p = task % P
            lo = min(K, p * size)
            hi = min(K, lo + size)
            for r in range(B):
                srow = s[h, r, lo:hi]
                wrow = w[h, r, lo:hi]
                total = sums[h, row_tile[r], lo:hi]
                most = maxes[h, row_tile[r], lo:hi]
                top_s = np.float32(-3.0e38)
                top_w = np.float32(0.0)
                ps = np.float32(0.0)
                # keys up to the row's own position (a causal row's distances 0..) add into its distance sums
                i = base + r
                seen = max(0, min(hi, i + 1) - lo) if D > 0 and counted[r] else 0
                by_distance = rev[p, h, D - 1 - i + lo:D - 1 - i + lo + seen] if seen else rev[p, h, :0]
                for k in range(hi - lo):
                    x = wrow[k]
                    top_s = max(top_s, srow[k])
                    top_w = max(top_w, x)
                    ps += x * srow[k]
                    total[k] += x
                    most[k] = max(most[k], x)
                for k in range(seen):  # the row is in the cache now
                    by_distance[k] += wrow[k]
                stats[p, 0, h, r] = top_s
                stats[p, 1, h, r] = top_w
                stats[p, 2, h, r] = ps

    return run


def reduce_block(s, w, row_tile: np.ndarray, counted: np.ndarray | None, base: int, parts: int | None = None):
    """(entropy nats (head, B), tile-row sums (head, R, K), tile-row maxima (head, R, K), distance sums (head, D) or
    None) of a block: s and w torch float32 (head, B, K), scores and weights of rows q0.. over keys k0..; row_tile
    (B,) each row's tile row in the block (0..R-1); counted (B,) bool, the rows the distance sums count, or None
    for no distance sums (they are a causal layer's: D = q0 + B - k0 distances, from 0); base = q0 - k0.
    parts: how many parts the keys are cut into (by default as many as share the heads evenly among the threads)."""
    H, B, K = w.shape
    R = int(row_tile.max()) + 1
    if parts is None:
        # the heads x key parts are shared by the threads: as many tasks each (nine heads on two threads would
        # idle one thread for a ninth of the time), and at least two
        threads, parts = configure_threads(), 1
        while (H * parts) % threads or H * parts < 2 * threads:
            parts += 1
    parts = max(1, min(parts, K))
    sums, maxes = np.zeros((H, R, K), np.float32), np.zeros((H, R, K), np.float32)
    stats = np.empty((parts, 3, H, B), np.float32)
    D = base + B if counted is not None else 0
    rev = np.zeros((parts, H, D), np.float32)
    compiled.threads()
    _kernel()(s.numpy(), w.numpy(), np.ascontiguousarray(row_tile, np.int64),
              np.ones(B, np.bool_) if counted is None else np.ascontiguousarray(counted, np.bool_), int(base),
              sums, maxes, stats, rev)
    top_s, top_w, ps = stats[:, 0].max(0), stats[:, 1].max(0), stats[:, 2].sum(0)
    # entropy: H = lse - sum_j p_j s_j, and at the largest score p = 1/Z, so lse = max s - log(max p)
    nats = np.maximum(top_s - np.log(top_w) - ps, 0)
    return nats, sums, maxes, (rev.sum(0)[:, ::-1] if counted is not None else None)
