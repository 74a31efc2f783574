"""float32 functions for the compiled loops (numba) that the loops vectorise: libm's exp and log are calls, one value
at a time. Import this module after compiled.numba(), which sets numba's thread count and threading layer.

exp(x) = 2^k exp(r) with k the integer nearest x log2(e) and r = x - k ln 2 taken in two parts (ln 2's leading bits,
then the rest), exp(r) by a degree-7 polynomial (Cephes' expf coefficients for |r| <= ln(2)/2), 2^k built from its
exponent bits. log(x) = e ln 2 + log(m) with x = m 2^e and m in [sqrt(1/2), sqrt(2)), log(1 + t) = t - t^2/2 +
t^3 P(t) with Cephes' logf polynomial. Both are within about three units in the last place of the exact value."""
from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

LOW = np.float32(-87.33654)  # log of the smallest normal float32: exp below it is 0 (a denormal or less)
LOG2E = np.float32(1.4426950408889634)
LN2_HI = np.float32(0.693359375)  # ln 2 = LN2_HI + LN2_LO, the first part exact in a few bits
LN2_LO = np.float32(-2.12194440e-4)
C0, C1, C2, C3, C4, C5 = (np.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
SQRT_HALF = np.float32(0.70710678118654752)
L0, L1, L2, L3, L4, L5, L6, L7, L8 = (np.float32(c) for c in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
    2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1))
NAN = np.float32(np.nan)


@intrinsic
def float_from_bits(typingctx, bits):
    """The float32 whose bits are the given int32 (a bit cast, which the loops vectorise)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@intrinsic
def exponent_field(typingctx, x):
    """The biased exponent bits of a float32 (0 to 255), as a float32. In 32-bit integer operations: numba's own
    integer arithmetic widens to 64 bits, which the loops then convert back lane by lane (a third of the log's time)."""
    def codegen(context, builder, signature, args):
        bits = builder.bitcast(args[0], ir.IntType(32))
        field = builder.and_(builder.lshr(bits, ir.Constant(ir.IntType(32), 23)), ir.Constant(ir.IntType(32), 0xFF))
        return builder.sitofp(field, ir.FloatType())
    return types.float32(types.float32), codegen


@intrinsic
def mantissa_half(typingctx, x):
    """The float32 with x's mantissa and 0.5's exponent: in [0.5, 1) for a normal x > 0."""
    def codegen(context, builder, signature, args):
        bits = builder.bitcast(args[0], ir.IntType(32))
        m = builder.or_(builder.and_(bits, ir.Constant(ir.IntType(32), 0x007FFFFF)),
                        ir.Constant(ir.IntType(32), 0x3F000000))
        return builder.bitcast(m, ir.FloatType())
    return types.float32(types.float32), codegen


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


LANES = 16  # running maxima of largest(): one 512-bit vector of float32


@nb.njit(inline="always", fastmath=True, cache=True)
def largest(row):
    """The largest value of a float32 row (-3e38 for an empty row). A single running maximum is not vectorised
    (each step waits on the last compare: over a 32 KB row, four times as slow as the exponentials after it);
    LANES running maxima are, and are reduced at the end."""
    n = row.shape[0]
    whole = n // LANES * LANES
    lanes = np.full(LANES, np.float32(-3.0e38))
    for k0 in range(0, whole, LANES):
        for j in range(LANES):
            x = row[k0 + j]
            lanes[j] = x if x > lanes[j] else lanes[j]
    top = np.float32(-3.0e38)
    for j in range(LANES):
        top = lanes[j] if lanes[j] > top else top
    for k in range(whole, n):
        top = row[k] if row[k] > top else top
    return top


@nb.njit(inline="always", fastmath={"contract", "reassoc"}, cache=True)
def log_positive(x):
    """log(x) as float32 for a normal x > 0 (finite); nan for x <= 0 (a denormal x is not expected)."""
    m = mantissa_half(x)  # x = m 2^e, m in [0.5, 1), e = exponent field - 126
    low = m < SQRT_HALF
    ef = exponent_field(x) - (np.float32(127.0) if low else np.float32(126.0))  # m in [sqrt(1/2), sqrt(2))
    t = (m + m - np.float32(1.0)) if low else (m - np.float32(1.0))
    z = t * t
    y = ((((((((L0 * t + L1) * t + L2) * t + L3) * t + L4) * t + L5) * t + L6) * t + L7) * t + L8) * t * z
    y = y + ef * LN2_LO - np.float32(0.5) * z
    r = t + y + ef * LN2_HI
    return r if x > 0 else NAN
