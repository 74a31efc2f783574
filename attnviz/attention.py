"""Attention maths: scaled dot-product with masks, in numpy (for teaching) and torch (for models)."""
from __future__ import annotations

from dataclasses import dataclass

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


# ---------------------------------------------------------------------------------------
# Teaching helpers (the attention lab): every intermediate step, masks for a batch,
# and the softmax Jacobian used to show saturation.

@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate of softmax(Q K^T / (sqrt(d_k) T)) V for one (n_q, n_k) problem."""

    scores: np.ndarray  # (n_q, n_k) Q K^T, the raw dot products
    divisor: float  # sqrt(d_k) * T (or T alone when scaling is off)
    scaled: np.ndarray  # (n_q, n_k) scores / divisor
    masked: np.ndarray  # (n_q, n_k) scaled scores with -inf where the mask forbids
    weights: np.ndarray  # (n_q, n_k) row softmax; a row with no visible key is all zeros
    output: np.ndarray  # (n_q, d_v) weights @ V
    d_k: int  # width of Q and K


def attention_steps(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None = None,
                    temperature: float = 1.0, scale: bool = True) -> AttentionSteps:
    """All steps of scaled dot-product attention for one head.

    q: (n_q, d_k); k: (n_k, d_k); v: (n_k, d_v); mask: bool (n_q, n_k), True = may attend.
    Raises BadInput for mismatched shapes or a temperature that is not > 0.
    """
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    for name, x in (("Q", q), ("K", k), ("V", v)):
        if x.ndim != 2 or x.size == 0:
            raise BadInput(f"{name} must be a non-empty matrix (rows x columns).")
    output, weights = scaled_dot_product(q, k, v, mask=mask, temperature=temperature, scale=scale)
    scores = q @ k.T
    divisor = (np.sqrt(q.shape[1]) if scale else 1.0) * temperature
    scaled = scores / divisor
    masked = scaled if mask is None else np.where(mask, scaled, -np.inf)
    return AttentionSteps(scores=scores, divisor=float(divisor), scaled=scaled, masked=masked,
                          weights=weights, output=output, d_k=q.shape[1])


def padding_mask(lengths, max_len: int) -> np.ndarray:
    """(batch, max_len) bool, True at real tokens, for sequences of the given lengths padded
    to max_len. Raises BadInput when a length is negative or longer than max_len."""
    lengths = [int(n) for n in lengths]
    if max_len < 1:
        raise BadInput("The padded length must be at least 1.")
    for i, n in enumerate(lengths):
        if n < 0:
            raise BadInput(f"Sequence {i + 1} has a negative length ({n}).")
        if n > max_len:
            raise BadInput(f"Sequence {i + 1} has length {n}, longer than the padded length {max_len}: "
                           f"the batch is padded to its longest sequence, so no length can exceed it.")
    return np.arange(max_len)[None, :] < np.array(lengths, dtype=int)[:, None]


def batch_masks(lengths, max_len: int, causal: bool = True, padding: bool = True) -> np.ndarray:
    """(batch, max_len, max_len) bool self-attention masks, True = query i may attend key j.

    Padding hides padded KEYS (a padded query still sees real keys); causal hides j > i.
    Both together are the logical AND of the two 'may attend' masks.
    """
    pad = padding_mask(lengths, max_len)  # (B, T)
    mask = np.ones((len(pad), max_len, max_len), dtype=bool)
    if padding:
        mask &= pad[:, None, :]  # (B, 1, T) keys
    if causal:
        mask &= causal_mask(max_len)[None]
    return mask


def softmax_jacobian(p: np.ndarray) -> np.ndarray:
    """d softmax / d scores for probability rows p (..., n): (..., n, n) = diag(p) - p p^T."""
    p = np.asarray(p, dtype=np.float64)
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def row_entropy(p: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Entropy in nats of each probability row p (..., n) -> (...). (The head analytics'
    metrics.entropy.row_entropy adds key masks and normalisation on top of the same sum.)"""
    p = np.asarray(p, dtype=np.float64)
    return -(p * np.log(p + eps)).sum(axis=-1)


def total_variation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Total-variation distance between matching probability rows: (..., key) -> (...).
    Half the L1 distance: 0 for the same row, 1 for rows with no weight in common."""
    return 0.5 * np.abs(np.asarray(a) - np.asarray(b)).sum(axis=-1)  # in the inputs' own dtype


def allowed_keys(seq_len: int, causal: bool) -> np.ndarray:
    """bool (query, key): True where a query may attend to a key (j <= i when causal)."""
    if seq_len < 1:
        raise BadInput("There are no tokens to analyse.")
    return causal_mask(seq_len) if causal else np.ones((seq_len, seq_len), dtype=bool)
