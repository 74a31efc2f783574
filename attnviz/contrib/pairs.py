"""Every (query, key) quantity of one attention layer in one pass over the keys, compiled with numba.

For key j and query i, with a_hi = alpha^h_ij (the heads' weights of the pair), f_h = f_h(x_j) in the target's
space, s_i = sign(y_i) and G_j = the Gram matrix f_h(x_j) . f_m(x_j) in the model's own space:
  gain        sum_k min(s_ik T_ijk, 2|y_ik| - s_ik T_ijk)  T_ij = sum_h a_hi f_h
              = ||y_i||_1 - ||y_i - T_ij||_1, each term exact where T_ijk does not overshoot y_ik (see decompose)
  norm2       ||u_ij||^2 = a_i . G_j a_i
  weight      sum_h a_hi                                  zero for a key no head of row i attends to
T_ij is made and reduced in registers, two components at a time, so its n^2 d values never go through memory:
made by a GEMM of inner dimension H and reduced by passes over its output, they would be bound by memory.
spread() writes the key-major copy of the weights that the pass reads, and when asked the value-weighted maps, in one
read of the weights."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from attnviz import compiled

# the components are taken two at a time: the heads' weights of a pair are loaded once for both
_STEP = 2
# query rows per task of spread(): 16 rows of 4-byte values fill one 64-byte line of the key-major copy
_QUERY_BLOCK = 16


@lru_cache(maxsize=None)
def _kernel(heads: int):
    """The pass for a model of `heads` heads: the head count is a constant of the compiled code, so the loop
    over heads unrolls and the loop over queries vectorises. Compiled once per head count and kept in numba's
    on-disk cache."""
    numba = compiled.numba()

    H, U = heads, _STEP

    @numba.njit(parallel=True, fastmath={"contract"}, cache=True)
    def run(Ak, F, G, R, out):
        # Ak (key, head, q); F (head, key, d padded to R's blocks); G (key, head, head);
        # R (d / U, 2U, q): U rows of signs then U rows of 2|y|; out (2, key, q), zeros
        n_keys, _, n_q = Ak.shape
        n_blocks = R.shape[0]
        for j in numba.prange(n_keys):
            a = Ak[j]
            f = F[:, j]  # read one value at a time: any layout does
            gain = out[0, j]
            norm2 = out[1, j]
            for b in range(n_blocks):
                r = R[b]
                k = b * U
                for i in range(n_q):
                    for u in range(U):
                        # the heads in two sums, even and odd, so that two chains of multiply-adds run at once
                        t = np.float32(0.0)
                        t_odd = np.float32(0.0)
                        for h in range(0, H, 2):
                            t += a[h, i] * f[h, k + u]
                        for h in range(1, H, 2):
                            t_odd += a[h, i] * f[h, k + u]
                        st = r[u, i] * (t + t_odd)
                        gain[i] += min(st, r[U + u, i] - st)
            g = G[j]
            for h in range(H):  # head by head, so that each loop over the queries has a fixed body
                for i in range(n_q):
                    row = np.float32(0.0)
                    for m in range(H):
                        row += g[h, m] * a[m, i]
                    norm2[i] += a[h, i] * row
            for i in range(n_q):
                weight = np.float32(0.0)
                for h in range(H):
                    weight += a[h, i]
                # a key no head of the row attends to gives nothing (float rounding would leave ~1e-7)
                gi = gain[i]
                gain[i] = gi if gi > 0 and weight > 0 else np.float32(0.0)

    return run


@lru_cache(maxsize=None)
def _spreader():
    """The pass that writes value-weighted attention and the key-major copy of the weights, reading them once.
    Weights below the smallest normal float32 are written as 0: a softmax over 512 keys leaves some (about 0.5% of
    MiniLM's first layer), and each multiplication by one takes the processor's slow path; with them, ALTI's pass
    over that layer took 95 ms instead of 17."""
    numba = compiled.numba()

    B, tiny = _QUERY_BLOCK, compiled.TINY

    @numba.njit(parallel=True, fastmath={"contract"}, cache=True)
    def run(A, fnorm, vw, Ak, maps):
        # A (head, q, k); fnorm (head, k); vw (head, q, k) = A * fnorm, written when `maps`;
        # Ak (key, head, q) = A's copy
        heads, n_q, n_keys = A.shape
        n_blocks = (n_q + B - 1) // B
        for t in numba.prange(heads * n_blocks):
            h = t // n_blocks
            i0 = (t % n_blocks) * B
            i1 = min(n_q, i0 + B)
            fn = fnorm[h]
            for i in range(i0, i1 if maps else i0):
                row = A[h, i]
                out = vw[h, i]
                for j in range(n_keys):
                    a = row[j]
                    out[j] = a * fn[j] if a >= tiny else np.float32(0.0)
            for j in range(n_keys):  # a block of B rows at a time, so the reads stay in cache
                dst = Ak[j, h]
                for i in range(i0, i1):
                    a = A[h, i, j]
                    dst[i] = a if a >= tiny else np.float32(0.0)

    return run


def spread(A: np.ndarray, fnorm: np.ndarray, vw=None, Ak: np.ndarray | None = None):
    """(vw, Ak): the value-weighted attention A * fnorm (head, q, k) and A's key-major copy (key, head, q) that
    pairs() takes, weights below the smallest normal float32 as 0, written into the arrays given (of those shapes,
    float32, C order) or new ones; vw=False: the copy alone (vw returned as None)."""
    heads, n_q, n_keys = A.shape
    maps = vw is not False
    vw = (compiled.aligned(A.shape) if vw is None else vw) if maps else np.empty((0, 0, 0), np.float32)
    Ak = compiled.aligned((n_keys, heads, n_q)) if Ak is None else Ak
    compiled.threads()
    _spreader()(np.ascontiguousarray(A, np.float32), np.ascontiguousarray(fnorm, np.float32), vw, Ak, maps)
    return (vw if maps else None), Ak


def pairs(Ak: np.ndarray, F: np.ndarray, G: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gain, norm2), each (q, k) float32 (views of key-major arrays), for every pair: gain = max(0, ||y_i||_1 -
    ||y_i - T_ij||_1), zero where no head of row i attends to key j (ALTI's contribution before the rows are
    normalised, off the diagonal), and norm2 = ||u_ij||^2 (see the module docstring).

    Ak (key, head, q) the attention weights; F (head, key, d) each key's head vectors in target's space;
    G (key, head, head) their Gram matrices in the model's space; target (q, d) the rows y_i."""
    n_keys, heads, n_q = Ak.shape
    d = F.shape[-1]
    blocks = -(-d // _STEP)
    if blocks * _STEP != d:  # a zero component (with 2|y| = 0 in R) adds min(0, 0) = 0
        F = np.concatenate([F, np.zeros((heads, n_keys, blocks * _STEP - d), np.float32)], axis=-1)
    R = compiled.aligned((blocks, 2 * _STEP, n_q))
    out = compiled.aligned((2, n_keys, n_q))  # zeros
    compiled.threads()
    _rows()(np.ascontiguousarray(target, np.float32), R)
    _kernel(heads)(compiled.aligned(Ak.shape, Ak), np.asarray(F, np.float32), np.asarray(G, np.float32), R, out)
    return out[0].T, out[1].T


@lru_cache(maxsize=None)
def _rows():
    """The loop that writes pairs()'s R from the rows y (q, d): R[k // U, k % U, i] = sign(y_ik) (+1 at 0) and
    R[k // U, U + k % U, i] = 2 |y_ik|; R's padding components stay 0."""
    numba = compiled.numba()

    U, B = _STEP, _QUERY_BLOCK

    @numba.njit(fastmath={"contract"}, cache=True)
    def run(y, R):
        n_q, d = y.shape
        for i0 in range(0, n_q, B):  # B rows at a time: whole 64-byte lines of R written, y's B lines in cache
            i1 = min(n_q, i0 + B)
            for k in range(d):
                sign = R[k // U, k % U]
                twice = R[k // U, U + k % U]
                for i in range(i0, i1):
                    v = y[i, k]
                    sign[i] = np.float32(1.0) if v >= 0 else np.float32(-1.0)
                    twice[i] = np.float32(2.0) * abs(v)

    return run
