"""The compiled loop of analysis.analyse (numba): every head's weights read once, row by row, for the things the
analytics pages need of them. At module level, so that numba's on-disk cache finds it again in a new process.
Import it after compiled.numba(), which sets numba's thread count and threading layer."""
from __future__ import annotations

import numba as nb
import numpy as np

from attnviz.vecmath import log_positive

ROWS = 32  # query rows per task: a layer of 512 tokens is 16 tasks
# A task reads its rows head by head (32 consecutive rows of one head's matrix, 64 KB at 512 tokens, then the next
# head's): reading each row of all heads in turn (12 places 1 MB apart, row after row) took about 20% longer.


@nb.njit(parallel=True, fastmath={"contract", "reassoc"}, cache=True)
def head_pass(att, mask, masked, eps, row_weight, columns, residual, plogp, fused, cols, mix, near):
    """att (layer, head, q, k) float32, q = k; mask (q, k) float32 0/1, read only when `masked`; eps added inside the
    log; row_weight (q,) the weight of each query row in the column means; columns (c,) int64: the key columns whose
    means are wanted; residual: rollout's weight on the identity. Written:
    plogp (layer, head, q) = sum_k p log(p + eps) with p = att * mask;
    fused (layer, q, k), zeros: the mean over heads of att;
    cols (layer, task, head, c), zeros: sum over the task's rows of row_weight * att in each of `columns`, the column
    means in parts (summed over tasks after);
    mix (layer, q, k): rollout's matrices, (1 - residual) fused + residual I with every row divided by its sum (a row
    summing to 0 is left undivided), as rollout.mixing_matrices makes them without discarding;
    near (layer, 3, head, q), zeros: each row's weight on key q, q - 1 and q + 1 (where there is one), which the self /
    previous / next token roles read."""
    L, H, n, K = att.shape
    tasks = (n + ROWS - 1) // ROWS
    for t in nb.prange(L * tasks):
        layer = t // tasks
        block = t % tasks
        q0 = block * ROWS
        q1 = min(n, q0 + ROWS)
        for h in range(H):
            crow = cols[layer, block, h]
            for q in range(q0, q1):
                frow = fused[layer, q]
                w = row_weight[q]
                row = att[layer, h, q]
                s = np.float32(0.0)
                if masked:
                    mrow = mask[q]
                    for k in range(K):
                        x = row[k]
                        frow[k] += x
                        p = x * mrow[k]
                        s += p * log_positive(p + eps)
                else:
                    for k in range(K):
                        x = row[k]
                        frow[k] += x
                        s += x * log_positive(x + eps)
                plogp[layer, h, q] = s
                for c in range(columns.shape[0]):
                    crow[c] += w * row[columns[c]]
                near[layer, 0, h, q] = row[q]
                if q >= 1:
                    near[layer, 1, h, q] = row[q - 1]
                if q + 1 < K:
                    near[layer, 2, h, q] = row[q + 1]
        for q in range(q0, q1):
            frow = fused[layer, q]
            total = np.float32(0.0)
            for k in range(K):
                f = frow[k] / np.float32(H)
                frow[k] = f
                total += f
            keep = np.float32(1.0) - residual
            row_sum = keep * total + residual
            scale = np.float32(1.0) / row_sum if row_sum > 0 else np.float32(1.0)
            mrow = mix[layer, q]
            for k in range(K):
                mrow[k] = keep * frow[k] * scale
            mrow[q] = (keep * frow[q] + residual) * scale
