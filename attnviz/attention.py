"""Attention maths: scaled dot-product with masks, in numpy (for teaching) and torch (for models)."""
from __future__ import annotations

import numpy as np

from attnviz.errors import BadInput


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax. A row whose entries are all -inf gets all zeros (not NaN)."""
    scores = np.asarray(scores, dtype=np.float64)
    peak = np.max(scores, axis=axis, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    e = np.exp(scores - peak)
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def scaled_dot_product(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None,
                       temperature: float = 1.0, scale: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(output, weights) of softmax(Q K^T / (sqrt(d_k) * T)) V in numpy.

    q: (..., n_q, d_k); k: (..., n_k, d_k); v: (..., n_k, d_v); mask: bool broadcastable to
    (..., n_q, n_k), True where a query MAY attend. Returns output (..., n_q, d_v) and
    weights (..., n_q, n_k); a fully masked row gets zero weights and a zero output.
    """
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    if q.shape[-1] != k.shape[-1]:
        raise BadInput(f"Q and K must have the same width d_k: Q has {q.shape[-1]} columns, K has {k.shape[-1]}.")
    if k.shape[-2] != v.shape[-2]:
        raise BadInput(f"K and V must have the same number of rows: K has {k.shape[-2]}, V has {v.shape[-2]}.")
    if not temperature > 0:
        raise BadInput("The temperature must be greater than 0 (T = 0 would divide by zero).")
    scores = q @ np.swapaxes(k, -1, -2)
    if scale:
        scores = scores / np.sqrt(q.shape[-1])
    scores = scores / temperature
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    return weights @ v, weights


def causal_mask(n: int) -> np.ndarray:
    """(n, n) bool: True where query i may attend key j, i.e. j <= i."""
    return np.tril(np.ones((n, n), dtype=bool))


def sdpa_torch(q, k, v, mask=None, bias=None):
    """Torch scaled dot-product returning (output, weights), so models can capture weights.

    q: (B, H, T_q, d_head); k, v: (B, H, T_k, d_head); mask: bool broadcastable to
    (B, H, T_q, T_k), True = may attend; bias: float added to the scores (ALiBi, relative).
    """
    import torch

    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5  # (B, H, T_q, T_k)
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)  # fully masked rows -> zeros
    return weights @ v, weights
