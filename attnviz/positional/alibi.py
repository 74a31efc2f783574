"""ALiBi (Press et al. 2022): per-head slopes and the linear distance bias on attention scores."""
from __future__ import annotations

import math

import numpy as np

from attnviz.attention import softmax
from attnviz.errors import BadInput
from attnviz.positional.sinusoidal import check_length

MAX_HEADS = 256


def _check_heads(n_heads: int) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or not 1 <= n_heads <= MAX_HEADS:
        raise BadInput(f"The number of heads must be a whole number from 1 to {MAX_HEADS}, got {n_heads!r}.")
    return int(n_heads)


def power_of_two_below(n: int) -> int:
    """The largest power of two <= n (n >= 1): 8 for 8 to 15 heads."""
    return 2 ** math.floor(math.log2(n))


def alibi_slopes(n_heads: int) -> np.ndarray:
    """(n_heads,) slopes as in the ALiBi reference code (`get_slopes`).

    A power of two n gives the geometric sequence 2^(-8/n), 2^(-16/n), ..., 2^(-8): for 8
    heads 1/2, 1/4, ..., 1/256. Otherwise the closest smaller power of two p gives its p
    slopes, followed by every other slope of 2p heads (the odd ones) until n are reached:
    for 12 heads 1/2 ... 1/256, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
    """
    n_heads = _check_heads(n_heads)

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    p = power_of_two_below(n_heads)
    if p == n_heads:
        return np.array(power_of_two(n_heads))
    extra = alibi_slopes(2 * p)[0::2][: n_heads - p]
    return np.concatenate([power_of_two(p), extra])


def paper_slopes(n_heads: int) -> np.ndarray:
    """(n_heads,) slopes by the paper's formula m_h = 2^(-8h/n), h = 1 .. n.

    The same as alibi_slopes when n is a power of two; for other n the reference code (and
    attnviz) uses alibi_slopes instead: at 6 heads the paper gives 2^(-4/3), 2^(-8/3), ... and
    the reference 1/4, 1/16, 1/64, 1/256, then 1/2, 1/8.
    """
    n_heads = _check_heads(n_heads)
    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)


def content_scores(seq_len: int, spread: float, seed: int = 1) -> np.ndarray:
    """(seq_len, seq_len) seeded random content scores q.k/sqrt(d) with standard deviation `spread`."""
    rng = np.random.default_rng(seed)
    return spread * rng.standard_normal((seq_len, seq_len))


def alibi_bias(n_heads: int, seq_len: int, causal: bool = True) -> np.ndarray:
    """(n_heads, seq_len, seq_len) bias -slope_h * |i - j| added to query i's score for key j.

    causal=True (ALiBi's decoder setting): keys after the query (j > i) get -inf, i.e. masked.
    """
    seq_len = check_length(seq_len, "The sequence length", limit=2048)
    slopes = alibi_slopes(n_heads)
    pos = np.arange(seq_len)
    dist = np.abs(pos[:, None] - pos[None, :]).astype(np.float64)  # (seq_len, seq_len)
    bias = -slopes[:, None, None] * dist[None]
    if causal:
        bias = np.where(pos[None, :] > pos[:, None], -np.inf, bias)
    return bias


def alibi_attention(content_scores: np.ndarray, n_heads: int, causal: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Attention weights without and with ALiBi for one (seq_len, seq_len) matrix of raw scores.

    content_scores: q_i . k_j / sqrt(d_head) (already scaled). Returns (plain, biased):
    plain (seq_len, seq_len) = softmax of the scores (causally masked if causal), biased
    (n_heads, seq_len, seq_len) = softmax(scores + ALiBi bias of each head).
    """
    s = np.asarray(content_scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise BadInput(f"Expected a square (query, key) score matrix, got shape {s.shape}.")
    bias = alibi_bias(n_heads, s.shape[0], causal)
    zero = np.where(np.isinf(bias[0]), -np.inf, 0.0)
    return softmax(s + zero, axis=-1), softmax(s[None] + bias, axis=-1)
