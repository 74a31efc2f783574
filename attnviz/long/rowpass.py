"""The long summaries' softmax and reductions over one block of scores, in one read of each row (numba): the
row's weights (written for the weights x values product), its entropy, the block's weights summed and maximised
over each tile row (the pooled grid), and, for a causal layer, the weights summed by distance. Done with torch,
the softmax and each reduction is its own pass over the block (tens of MB at 8,192 tokens, beyond the cache);
here a row (at most 32 KB at 8,192 keys) is read from memory once and the rest of its work reads it from the
cache.

The exponential is computed in the loop, so that it is vectorised: exp(x) = 2^k exp(r) with k the integer
nearest x log2(e) and r = x - k ln 2 taken in two parts (ln 2's leading bits, then the rest), exp(r) by its
degree-7 Taylor polynomial with the coefficients refitted for |r| <= ln(2)/2 (Cephes' expf), and 2^k built
from its exponent bits. Its relative error is about one unit in the last place, as torch's softmax."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from attnviz import compiled
from attnviz.runtime import configure_threads

TINY = np.float32(1.1754944e-38)  # the smallest normal float32: weights below it are set to 0 (no denormals)
_LOW = np.float32(-87.33654)  # log(TINY): exp below it is 0 (a denormal or less)
_LOG2E = np.float32(1.4426950408889634)
_LN2_HI = np.float32(0.693359375)  # ln 2 = _LN2_HI + _LN2_LO, the first part exact in a few bits
_LN2_LO = np.float32(-2.12194440e-4)
_POLY = tuple(np.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                      1.6666665459e-1, 5.0000001201e-1))


@lru_cache(maxsize=None)
def _float_from_bits():
    """numba intrinsic: the float32 whose bits are the given int32 (a bit cast, which the loops vectorise)."""
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def float_from_bits(typingctx, bits):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.FloatType())
        return types.float32(types.int32), codegen

    return float_from_bits


@lru_cache(maxsize=None)
def _exp_nonpositive():
    nb = compiled.numba()
    bits = _float_from_bits()
    low, log2e, hi, lo = _LOW, _LOG2E, _LN2_HI, _LN2_LO
    c0, c1, c2, c3, c4, c5 = _POLY

    @nb.njit(inline="always", fastmath=True)
    def exp_nonpositive(x):
        """exp(x) for x <= 0 as float32, exactly 0 where it would be below the smallest normal float32."""
        xc = max(x, low)
        k = np.floor(xc * log2e + np.float32(0.5))
        r = xc - k * hi - k * lo
        p = ((((c0 * r + c1) * r + c2) * r + c3) * r + c4) * r + c5
        p = p * r * r + r + np.float32(1.0)
        e = p * bits((np.int32(k) + np.int32(127)) << 23)
        return e if x > low else np.float32(0.0)

    return exp_nonpositive


@lru_cache(maxsize=None)
def _kernel():
    nb = compiled.numba()
    exp_nonpositive = _exp_nonpositive()
    tiny = TINY

    @nb.njit(parallel=True, fastmath=True, cache=True)
    def run(s, w, chunk, counted, base, sums, maxes, nats, rev):
        # s (head, B, K) scores; w (head, B, K) written: the softmax weights; chunk (B,): each row's chunk (rows
        # of one tile row, in order; the threads share the heads x chunks); counted (B,): rows the distance sums
        # count; base = q0 - k0; sums, maxes (head, C, K) zeros: each chunk's weights summed and maximised;
        # nats (head, B): each row's entropy; rev (C, head, D) zeros: rev[c, h, D-1-d] += chunk c's weight at
        # distance d, or D = 0 for none
        H, B, K = s.shape
        C, _, D = rev.shape
        for task in nb.prange(H * C):
            h = task // C
            c = task % C
            total = sums[h, c]
            most = maxes[h, c]
            for r in range(B):
                if chunk[r] != c:
                    continue
                srow = s[h, r]
                wrow = w[h, r]
                top = np.float32(-3.0e38)
                for k in range(K):
                    top = max(top, srow[k])
                z = np.float32(0.0)
                zx = np.float32(0.0)  # sum_j e_j x_j with x_j = s_j - top: the entropy is log z - zx / z
                for k in range(K):
                    x = srow[k] - top
                    e = exp_nonpositive(x)
                    wrow[k] = e
                    z += e
                    zx += e * x
                inv = np.float32(1.0) / z
                for k in range(K):  # the row is in the cache now
                    p = wrow[k] * inv
                    p = p if p >= tiny else np.float32(0.0)
                    wrow[k] = p
                    total[k] += p
                    most[k] = max(most[k], p)
                nats[h, r] = max(np.float32(np.log(z)) - zx * inv, np.float32(0.0))
                # keys up to the row's own position (a causal row's distances 0..) add into its distance sums
                i = base + r
                seen = max(0, min(K, i + 1)) if D > 0 and counted[r] else 0
                if seen:
                    by_distance = rev[c, h, D - 1 - i:D - 1 - i + seen]
                    for k in range(seen):
                        by_distance[k] += wrow[k]

    return run


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
