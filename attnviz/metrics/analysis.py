"""One pass over every head: entropy, role scores and the head-fused layers rollout needs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.metrics.entropy import EPS, RowEntropy, entropy_summary, result_masks
from attnviz.metrics.roles import ROLE_KEYS, RoleReader, RoleScores, broadness
from attnviz.metrics.rollout import RESIDUAL, roll


@dataclass(frozen=True)
class HeadAnalysis:
    entropy: dict  # as entropy.head_entropy returns: nats / normalised per row, head means
    roles: RoleScores  # role scores of every head
    fused_mean: np.ndarray  # float32 (layer, n, n): mean over heads, the default rollout input
    rollout: np.ndarray  # float32 (layer, n, n): default rollout (mean, residual 0.5, no discard)


def analyse(result) -> HeadAnalysis:
    """Everything the analytics pages need for all heads, reading each head's (n, n) matrix once
    (the 512-token attention of a 6 x 12 model is 75 MB): one compiled pass (metrics/headkernel.py)."""
    att = np.ascontiguousarray(result.attention, dtype=np.float32)
    n_layers, n_heads, n, _ = att.shape
    allowed, valid = result_masks(result)
    mask = None if allowed.all() else allowed
    ent = RowEntropy(mask, shape=(n, n))
    reader = RoleReader(result.tokens, result.special_mask, causal=result.facts.causal)
    plogp, fused, cols, mix, near = head_pass(att, mask, reader.row_weight, reader.columns)
    roles = np.stack([reader.layer(att[layer], col_mean=cols[layer], near=near[layer]) for layer in range(n_layers)],
                     axis=1)
    nats, norm = ent.finish(plogp.reshape(-1, n), (n_layers, n_heads))
    roles[ROLE_KEYS.index("broad")] = broadness(nats, allowed.sum(axis=-1))[..., reader.q].mean(axis=-1)
    return HeadAnalysis(entropy=entropy_summary(nats, norm, valid), roles=RoleScores(roles),
                        fused_mean=fused, rollout=roll(mix))


def head_pass(att: np.ndarray, allowed: np.ndarray | None, row_weight: np.ndarray, columns=None,
              residual: float = RESIDUAL) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """From att (layer, head, q, k) float32 C-contiguous, in one pass over it:
    plogp (layer, head, q): sum_k p log(p + EPS), p the weights of the allowed keys;
    fused (layer, q, k): the mean over heads;
    column means (layer, head, k): sum over rows of row_weight * weight in the key columns given (default every one),
    0 in the others;
    mixing (layer, q, k): rollout's matrices of the fused layers with this residual and nothing discarded, as
    rollout.mixing_matrices makes them;
    near (layer, 3, head, q): each row's weight on key q, q - 1 and q + 1, 0 where there is none."""
    from attnviz import compiled

    compiled.numba()
    from attnviz.metrics.headkernel import ROWS, head_pass as kernel

    n_layers, n_heads, n, n_keys = att.shape
    plogp = np.empty((n_layers, n_heads, n), dtype=np.float32)
    fused = compiled.aligned((n_layers, n, n_keys))
    columns = np.arange(n_keys) if columns is None else np.asarray(columns, np.int64)
    cols = np.zeros((n_layers, -(-n // ROWS), n_heads, len(columns)), np.float32)
    mix = compiled.aligned((n_layers, n, n_keys))
    near = np.zeros((n_layers, 3, n_heads, n), np.float32)
    mask = np.ones((1, 1), np.float32) if allowed is None else np.ascontiguousarray(allowed, dtype=np.float32)
    compiled.threads()
    kernel(att, mask, allowed is not None, np.float32(EPS), np.ascontiguousarray(row_weight, dtype=np.float32),
           np.ascontiguousarray(columns, np.int64), np.float32(residual), plogp, fused, cols, mix, near)
    col_mean = np.zeros((n_layers, n_heads, n_keys), np.float32)
    col_mean[..., columns] = cols.sum(axis=1)
    return plogp, fused, col_mean, mix, near
