"""The compiled loop of rowpass.softmax_block (numba), at module level so that numba's on-disk cache finds it again
in a new process (a loop made inside a function, calling another compiled function, is compiled anew each time).
Import it after compiled.numba(), which sets numba's thread count and threading layer.

The exponential is computed in the loop, so that it is vectorised: exp(x) = 2^k exp(r) with k the integer nearest
x log2(e) and r = x - k ln 2 taken in two parts (ln 2's leading bits, then the rest), exp(r) by a degree-7
polynomial (Cephes' expf coefficients for |r| <= ln(2)/2), and 2^k built from its exponent bits. Its relative error
is at most about three units in the last place (torch's softmax: about two)."""
from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from attnviz.compiled import TINY  # the smallest normal float32: weights below it are set to 0 (no denormals)
LOW = np.float32(-87.33654)  # log(TINY): exp below it is 0 (a denormal or less)
LOG2E = np.float32(1.4426950408889634)
LN2_HI = np.float32(0.693359375)  # ln 2 = LN2_HI + LN2_LO, the first part exact in a few bits
LN2_LO = np.float32(-2.12194440e-4)
C0, C1, C2, C3, C4, C5 = (np.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))


@intrinsic
def float_from_bits(typingctx, bits):
    """The float32 whose bits are the given int32 (a bit cast, which the loops vectorise)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@nb.njit(inline="always", fastmath=True, cache=True)
def exp_nonpositive(x):
    """exp(x) for x <= 0 as float32, exactly 0 where it would be below the smallest normal float32."""
    xc = max(x, LOW)
    k = np.floor(xc * LOG2E + np.float32(0.5))
    r = xc - k * LN2_HI - k * LN2_LO
    p = ((((C0 * r + C1) * r + C2) * r + C3) * r + C4) * r + C5
    p = p * r * r + r + np.float32(1.0)
    e = p * float_from_bits((np.int32(k) + np.int32(127)) << 23)
    return e if x > LOW else np.float32(0.0)


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
