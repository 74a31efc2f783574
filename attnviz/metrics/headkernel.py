"""The compiled loop of analysis.analyse (numba): every head's weights read once, row by row, for the three things
the analytics pages need of them. At module level, so that numba's on-disk cache finds it again in a new process.
Import it after compiled.numba(), which sets numba's thread count and threading layer."""
from __future__ import annotations

import numba as nb
import numpy as np

from attnviz.vecmath import log_positive

ROWS = 32  # query rows per task: a layer of 512 tokens is 16 tasks


@nb.njit(parallel=True, fastmath={"contract", "reassoc"}, cache=True)
def head_pass(att, mask, masked, eps, row_weight, plogp, fused, cols):
    """att (layer, head, q, k) float32; mask (q, k) float32 0/1, read only when `masked`; eps added inside the log;
    row_weight (q,) the weight of each query row in the column means. Written: plogp (layer, head, q) = sum_k p
    log(p + eps) with p = att * mask; fused (layer, q, k), zeros: the mean over heads of att; cols (layer, task, head,
    k), zeros: sum over the task's rows of row_weight * att, the column means in parts (summed over tasks after)."""
    L, H, n, K = att.shape
    tasks = (n + ROWS - 1) // ROWS
    for t in nb.prange(L * tasks):
        layer = t // tasks
        block = t % tasks
        q0 = block * ROWS
        for q in range(q0, min(n, q0 + ROWS)):
            frow = fused[layer, q]
            w = row_weight[q]
            for h in range(H):
                row = att[layer, h, q]
                crow = cols[layer, block, h]
                s = np.float32(0.0)
                if masked:
                    mrow = mask[q]
                    for k in range(K):
                        x = row[k]
                        frow[k] += x
                        crow[k] += w * x
                        p = x * mrow[k]
                        s += p * log_positive(p + eps)
                else:
                    for k in range(K):
                        x = row[k]
                        frow[k] += x
                        crow[k] += w * x
                        s += x * log_positive(x + eps)
                plogp[layer, h, q] = s
            for k in range(K):
                frow[k] /= np.float32(H)
