"""Multi-head attention in numpy, step by step: project, split into heads, attend, concat, W_O."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.attention import scaled_dot_product
from attnviz.errors import BadInput


@dataclass(frozen=True)
class MHAParams:
    """Weights in torch's nn.Linear convention: y = x @ W.T + b."""

    w_q: np.ndarray  # (n_heads * d_head, d_model)
    w_k: np.ndarray  # (n_kv_heads * d_head, d_model)
    w_v: np.ndarray  # (n_kv_heads * d_head, d_model)
    w_o: np.ndarray  # (d_model, n_heads * d_head)
    b_q: np.ndarray  # (n_heads * d_head,)
    b_k: np.ndarray  # (n_kv_heads * d_head,)
    b_v: np.ndarray  # (n_kv_heads * d_head,)
    b_o: np.ndarray  # (d_model,)

    @property
    def n_params(self) -> int:
        return sum(int(np.asarray(x).size) for x in vars(self).values())


@dataclass(frozen=True)
class MHASteps:
    q: np.ndarray  # (n_heads, n_q, d_head) queries per head
    k: np.ndarray  # (n_kv_heads, n_k, d_head) keys per KV head
    v: np.ndarray  # (n_kv_heads, n_k, d_head)
    weights: np.ndarray  # (n_heads, n_q, n_k) attention of each query head
    head_outputs: np.ndarray  # (n_heads, n_q, d_head)
    concat: np.ndarray  # (n_q, n_heads * d_head) heads side by side
    output: np.ndarray  # (n_q, d_model) concat @ W_O.T + b_O


def head_dim(d_model: int, n_heads: int) -> int:
    """d_model / n_heads, or BadInput with the plain reason when it does not divide."""
    if n_heads < 1 or d_model < 1:
        raise BadInput("d_model and the number of heads must both be at least 1.")
    if d_model % n_heads:
        raise BadInput(f"d_model = {d_model} is not divisible by n_heads = {n_heads}: each head would get "
                       f"{d_model / n_heads:.3g} dimensions, and a head cannot have a fractional width. "
                       f"Pick n_heads from the divisors of {d_model}: "
                       f"{', '.join(str(h) for h in range(1, d_model + 1) if d_model % h == 0)}.")
    return d_model // n_heads


def random_params(d_model: int, n_heads: int, n_kv_heads: int | None = None, seed: int = 0,
                  bias: bool = True) -> MHAParams:
    """Seeded random MHA weights (std 1/sqrt(d_model)), like a freshly initialised layer."""
    d_head = head_dim(d_model, n_heads)
    n_kv = n_heads if n_kv_heads is None else n_kv_heads
    if n_kv < 1 or n_heads % n_kv:
        raise BadInput(f"The number of KV heads ({n_kv}) must divide the number of query heads ({n_heads}).")
    rng = np.random.default_rng(seed)
    s = 1 / np.sqrt(d_model)

    def m(*shape):
        return rng.standard_normal(shape) * s

    def b(n):
        return rng.standard_normal(n) * s if bias else np.zeros(n)

    return MHAParams(w_q=m(n_heads * d_head, d_model), w_k=m(n_kv * d_head, d_model),
                     w_v=m(n_kv * d_head, d_model), w_o=m(d_model, n_heads * d_head),
                     b_q=b(n_heads * d_head), b_k=b(n_kv * d_head), b_v=b(n_kv * d_head), b_o=b(d_model))


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """(seq_len, n_heads * d_head) -> (n_heads, seq_len, d_head)."""
    seq_len, width = x.shape
    d_head = head_dim(width, n_heads)
    return x.reshape(seq_len, n_heads, d_head).transpose(1, 0, 2)


def multi_head_attention(x_q: np.ndarray, x_kv: np.ndarray, params: MHAParams, n_heads: int,
                         mask: np.ndarray | None = None) -> MHASteps:
    """Multi-head (or grouped-query) attention of x_q (n_q, d_model) over x_kv (n_k, d_model).

    The number of KV heads is read from the weights; query head h uses KV head
    h // (n_heads / n_kv_heads). mask: bool (n_q, n_k), True = may attend.
    """
    x_q = np.asarray(x_q, dtype=np.float64)
    x_kv = np.asarray(x_kv, dtype=np.float64)
    d_model = params.w_o.shape[0]
    if x_q.shape[-1] != d_model or x_kv.shape[-1] != d_model:
        raise BadInput(f"The inputs must have d_model = {d_model} columns.")
    d_head = head_dim(params.w_q.shape[0], n_heads)
    n_kv = params.w_k.shape[0] // d_head
    q = split_heads(x_q @ params.w_q.T + params.b_q, n_heads)  # (H, n_q, d_head)
    k = split_heads(x_kv @ params.w_k.T + params.b_k, n_kv)  # (H_kv, n_k, d_head)
    v = split_heads(x_kv @ params.w_v.T + params.b_v, n_kv)
    group = n_heads // n_kv
    k_rep = np.repeat(k, group, axis=0)  # (H, n_k, d_head): each KV head serves `group` query heads
    v_rep = np.repeat(v, group, axis=0)
    head_out, weights = scaled_dot_product(q, k_rep, v_rep, mask=mask)  # (H, n_q, d_head), (H, n_q, n_k)
    concat = head_out.transpose(1, 0, 2).reshape(x_q.shape[0], n_heads * d_head)  # (n_q, H * d_head)
    output = concat @ params.w_o.T + params.b_o
    return MHASteps(q=q, k=k, v=v, weights=weights, head_outputs=head_out, concat=concat, output=output)


def token_embeddings(tokens, d_model: int, seed: int = 0) -> np.ndarray:
    """(len(tokens), d_model) deterministic pseudo-embeddings: the same word always gets the
    same vector (seeded by the word), plus a small sinusoidal position signal."""
    rows = []
    for pos, tok in enumerate(tokens):
        word_seed = [seed] + [ord(c) for c in tok.lower()]
        vec = np.random.default_rng(word_seed).standard_normal(d_model)
        i = np.arange(d_model)
        angle = pos / 10000 ** ((i - i % 2) / d_model)
        vec = vec + 0.5 * np.where(i % 2 == 0, np.sin(angle), np.cos(angle))
        rows.append(vec)
    return np.array(rows).reshape(len(rows), d_model)
