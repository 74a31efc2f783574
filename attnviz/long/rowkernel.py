"""The compiled loop of rowpass.softmax_block (numba), at module level so that numba's on-disk cache finds it again
in a new process (a loop made inside a function, calling another compiled function, is compiled anew each time).
Import it after compiled.numba(), which sets numba's thread count and threading layer.

The exponential is computed in the loop, so that it is vectorised (vecmath.exp_nonpositive: within about three units
in the last place; torch's softmax: about two)."""
from __future__ import annotations

import numba as nb
import numpy as np

from attnviz.compiled import TINY  # weights below it are set to 0 (no denormals)
from attnviz.vecmath import exp_nonpositive, largest


@nb.njit(parallel=True, fastmath=True, cache=True)
def softmax_rows(s, w, chunk, counted, base, sums, maxes, nats, rev):
    """s (head, B, K) scores; w (head, B, K) written: the softmax weights; chunk (B,): each row's chunk (rows of one
    tile row, in order; the threads share the heads x chunks); counted (B,): rows the distance sums count; base =
    q0 - k0; sums, maxes (head, C, K) zeros: each chunk's weights summed and maximised; nats (head, B): each row's
    entropy; rev (C, head, D) zeros: rev[c, h, D-1-d] += chunk c's weight at distance d, or D = 0 for none."""
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
            top = largest(srow)
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
                p = p if p >= TINY else np.float32(0.0)
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
