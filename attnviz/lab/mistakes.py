"""Common attention mistakes, each with a small computation that shows it happening."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.attention import scaled_dot_product, softmax
from attnviz.errors import BadInput


@dataclass(frozen=True)
class Mistake:
    key: str  # stable id; the page picks the demo by it
    title: str
    wrong: str  # what people do
    fix: str  # what to do instead
    source: str  # "seeds" or "lab"


MISTAKES: tuple[Mistake, ...] = (
    Mistake("causal", "Forgetting the causal mask",
            "A decoder's self-attention runs without a mask, so position i can read tokens after it.",
            "Hide every key j > i (scores set to -inf before the softmax) in decoder self-attention.", "seeds"),
    Mistake("divisible", "d_model not divisible by n_heads",
            "d_model = 256 with 6 heads: the head width 256 / 6 is not an integer.",
            "Choose n_heads among the divisors of d_model (512 and 8 heads give d_head = 64).", "seeds"),
    Mistake("residual", "Leaving out the residual connections",
            "Attention layers are stacked as x = attn(x) instead of x = x + attn(x).",
            "Add the input back around every sublayer (pre-norm: x + sublayer(norm(x))).", "seeds"),
    Mistake("mask_sign", "A mask with the wrong sign",
            "The padding mask marks real tokens as 'masked', so the softmax attends only to padding.",
            "Check after masking: padded keys get exactly 0 weight, real keys the rest.", "seeds"),
    Mistake("no_scale", "Dropping the 1/√d_k",
            "Scores are used as raw dot products at large d_k.",
            "Divide by √d_k so the scores keep unit variance whatever the head width.", "seeds"),
    Mistake("hand_softmax", "Trusting a hand-computed softmax",
            "A worked example prints weights that sum to 1 but are not the softmax of its scores.",
            "Check the ratios too: weight_i / weight_j must equal exp(score_i - score_j).", "seeds"),
    Mistake("axis", "Softmax over the wrong axis",
            "The softmax normalises each column (over queries) instead of each row (over keys).",
            "Normalise over the keys (the last axis): every row must sum to 1.", "lab"),
    Mistake("cache_heads", "Sizing the KV cache with query heads",
            "The cache is sized with 9 heads for SmolLM2, which attends with 9 but stores 3.",
            "Use the KV heads: 2 x layers x KV heads x d_head x tokens x batch x bytes.", "lab"),
)


def rank_collapse(n_layers: int = 8, seq_len: int = 6, d: int = 8, seed: int = 0) -> dict[str, np.ndarray]:
    """How far apart the token vectors stay through n_layers of self-attention, with and without
    residual connections: mean distance of each token to the token mean, per layer (n_layers + 1,).

    Without residuals each layer averages the rows again, so all tokens converge to one vector.
    """
    if not 1 <= n_layers <= 32:
        raise BadInput("Use 1 to 32 layers.")
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal((seq_len, d))
    projections = [(rng.standard_normal((d, d)) / np.sqrt(d), rng.standard_normal((d, d)) / np.sqrt(d))
                   for _ in range(n_layers)]
    out = {}
    for name, residual in (("with residual", True), ("without residual", False)):
        x = x0
        spread = [np.linalg.norm(x - x.mean(0), axis=1).mean()]
        for wq, wk in projections:
            xn = (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-6)
            a, _ = scaled_dot_product(xn @ wq, xn @ wk, xn)
            x = x + a if residual else a
            spread.append(np.linalg.norm(x - x.mean(0), axis=1).mean())
        out[name] = np.array(spread)
    return out


def inverted_padding(lengths=(4,), max_len: int = 6, seed: int = 0) -> dict[str, np.ndarray]:
    """Weights of the first query when the padding mask is right and when its sign is flipped.

    Returns {"correct": (max_len,), "flipped": (max_len,)}; real tokens are the first lengths[0].
    """
    n = int(lengths[0])
    if not 1 <= n < max_len:
        raise BadInput("The sequence must be shorter than the padded length to have padding.")
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(max_len)
    real = np.arange(max_len) < n
    return {"correct": softmax(np.where(real, scores, -np.inf)),
            "flipped": softmax(np.where(~real, scores, -np.inf))}


def wrong_axis(scores: np.ndarray) -> dict[str, np.ndarray]:
    """Row sums of softmax over keys (right) and over queries (wrong) for scores (n_q, n_k)."""
    scores = np.asarray(scores, dtype=np.float64)
    right = softmax(scores, axis=-1)
    wrong = softmax(scores, axis=0)
    return {"right": right, "wrong": wrong, "right_row_sums": right.sum(-1), "wrong_row_sums": wrong.sum(-1)}


def ratio_check(weights: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """For one row: weights[i] / weights[-1] next to exp(scores[i] - scores[-1]); (n, 2).
    A true softmax has the two columns equal."""
    w = np.asarray(weights, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    return np.stack([w / w[-1], np.exp(s - s[-1])], axis=1)
