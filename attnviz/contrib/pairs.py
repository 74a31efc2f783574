"""Every (query, key) quantity of one attention layer in one pass over the keys, compiled with numba.

For key j and query i, with a_hi = alpha^h_ij (the heads' weights of the pair), f_h = f_h(x_j) in the target's
space, s_i = sign(y_i) and G_j = the Gram matrix f_h(x_j) . f_m(x_j) in the model's own space:
  linear      sum_k s_ik T_ijk                          T_ij = sum_h a_hi f_h
  overshoot   sum_k max(0, s_ik T_ijk - |y_ik|)
  norm2       ||u_ij||^2 = a_i . G_j a_i
  weight      sum_h a_hi                                 zero for a key no head of row i attends to
T_ij is made and reduced in registers, two components at a time, so its n^2 d values never go through memory:
made by a GEMM of inner dimension H and reduced by passes over its output, they would be bound by memory.
spread() writes the value-weighted maps and the key-major copy of the weights that the pass reads in one read."""
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
        # R (d / U, 2U, q): U rows of signs then U rows of |y|; out (3, key, q), zeros
        n_keys, _, n_q = Ak.shape
        n_blocks = R.shape[0]
        for j in numba.prange(n_keys):
            a = Ak[j]
            f = F[:, j]  # read one value at a time: any layout does
            linear = out[0, j]
            overshoot = out[1, j]
            norm2 = out[2, j]
            for b in range(n_blocks):
                r = R[b]
                k = b * U
                for i in range(n_q):
                    lin = np.float32(0.0)
                    over = np.float32(0.0)
                    for u in range(U):
                        t = np.float32(0.0)
                        for h in range(H):
                            t += a[h, i] * f[h, k + u]
                        st = r[u, i] * t
                        lin += st
                        over += max(st - r[U + u, i], np.float32(0.0))
                    linear[i] += lin
                    overshoot[i] += over
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
                gain = linear[i] - np.float32(2.0) * overshoot[i]
                linear[i] = gain if gain > 0 and weight > 0 else np.float32(0.0)

    return run


@lru_cache(maxsize=None)
def _spreader():
    """The pass that writes value-weighted attention and the key-major copy of the weights, reading them once."""
    numba = compiled.numba()

    B = _QUERY_BLOCK

    @numba.njit(parallel=True, fastmath={"contract"}, cache=True)
    def run(A, fnorm, vw, Ak):
        # A (head, q, k); fnorm (head, k); vw (head, q, k) = A * fnorm; Ak (key, head, q) = A's copy
        heads, n_q, n_keys = A.shape
        n_blocks = (n_q + B - 1) // B
        for t in numba.prange(heads * n_blocks):
            h = t // n_blocks
            i0 = (t % n_blocks) * B
            i1 = min(n_q, i0 + B)
            fn = fnorm[h]
            for i in range(i0, i1):
                row = A[h, i]
                out = vw[h, i]
                for j in range(n_keys):
                    out[j] = row[j] * fn[j]
            for j in range(n_keys):  # a block of B rows at a time, so the reads stay in cache
                dst = Ak[j, h]
                for i in range(i0, i1):
                    dst[i] = A[h, i, j]

    return run


def spread(A: np.ndarray, fnorm: np.ndarray, vw: np.ndarray | None = None, Ak: np.ndarray | None = None):
    """(vw, Ak): the value-weighted attention A * fnorm (head, q, k) and A's key-major copy (key, head, q) that
    pairs() takes, written into the arrays given (of those shapes, float32, C order) or new ones."""
    heads, n_q, n_keys = A.shape
    vw = np.empty(A.shape, np.float32) if vw is None else vw
    Ak = compiled.aligned((n_keys, heads, n_q)) if Ak is None else Ak
    compiled.threads()
    _spreader()(np.ascontiguousarray(A, np.float32), np.ascontiguousarray(fnorm, np.float32), vw, Ak)
    return vw, Ak


def pairs(Ak: np.ndarray, F: np.ndarray, G: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gain, norm2), each (q, k) float32 (views of key-major arrays), for every pair: gain = max(0, linear -
    2 overshoot), zero where no head of row i attends to key j (ALTI's contribution before the rows are normalised,
    off the diagonal), and norm2 = ||u_ij||^2 (see the module docstring).

    Ak (key, head, q) the attention weights; F (head, key, d) each key's head vectors in target's space;
    G (key, head, head) their Gram matrices in the model's space; target (q, d) the rows y_i."""
    n_keys, heads, n_q = Ak.shape
    d = F.shape[-1]
    blocks = -(-d // _STEP)
    if blocks * _STEP != d:  # a zero component with sign +1 and |y| = 0 adds nothing to either sum
        F = np.concatenate([F, np.zeros((heads, n_keys, blocks * _STEP - d), np.float32)], axis=-1)
        target = np.concatenate([target, np.zeros((n_q, blocks * _STEP - d), np.float32)], axis=-1)
    signs = np.where(target >= 0, np.float32(1), np.float32(-1)).T.reshape(blocks, _STEP, n_q)
    R = np.ascontiguousarray(np.concatenate([signs, np.abs(target).T.reshape(blocks, _STEP, n_q)], axis=1))
    out = compiled.aligned((3, n_keys, n_q))
    out[...] = 0
    compiled.threads()
    _kernel(heads)(compiled.aligned(Ak.shape, Ak), np.asarray(F, np.float32), np.asarray(G, np.float32),
                   compiled.aligned(R.shape, R), out)
    return out[0].T, out[2].T
