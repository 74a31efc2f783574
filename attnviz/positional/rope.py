"""Rotary position embedding (RoPE, Su et al. 2021) in numpy: rotation, relative property, decay."""
from __future__ import annotations

import numpy as np

from attnviz.attention import scaled_dot_product
from attnviz.errors import BadInput
from attnviz.positional.sinusoidal import check_base, check_even_dim, check_length


def rope_frequencies(d_head: int, base: float = 10000.0) -> np.ndarray:
    """(d_head/2,) angles per position theta_i = base^(-2i/d_head), i = 0 .. d_head/2 - 1."""
    d_head, base = check_even_dim(d_head, "d_head"), check_base(base)
    return base ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)


def rope_angles(position: float, d_head: int, base: float = 10000.0) -> np.ndarray:
    """(d_head/2,) rotation angle m * theta_i of every pair at position m (radians)."""
    return position * rope_frequencies(d_head, base)


def rope_matrix(m: float, d_head: int, base: float = 10000.0, dtype=np.float64) -> np.ndarray:
    """(d_head, d_head) block-diagonal R_m: pair (2i, 2i+1) rotated by m theta_i (paper layout).

    HF Llama pairs dimension i with i + d_head/2 instead ("rotate_half"); that is the same
    rotation after reordering the dimensions.
    """
    a = rope_angles(m, d_head, base)
    r = np.zeros((d_head, d_head), dtype=np.float64)
    idx = np.arange(0, d_head, 2)
    r[idx, idx], r[idx, idx + 1] = np.cos(a), -np.sin(a)
    r[idx + 1, idx], r[idx + 1, idx + 1] = np.sin(a), np.cos(a)
    return r.astype(dtype)


def apply_rope(x: np.ndarray, positions, base: float = 10000.0, dtype=np.float64) -> np.ndarray:
    """R_{p_t} x_t for every row t. x: (..., seq_len, d_head); positions: (seq_len,) numbers.

    Computed in `dtype` (float64 by default; float32 shows the drift real models have).
    Returns a new array of that dtype; x is not modified.
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise BadInput(f"RoPE needs vectors as rows, shape (..., seq_len, d_head); got shape {x.shape}.")
    d_head = check_even_dim(x.shape[-1], "d_head")
    pos = np.asarray(positions, dtype=np.float64)
    if pos.shape != (x.shape[-2],):
        raise BadInput(f"Need one position per row: {x.shape[-2]} rows but positions of shape {pos.shape}.")
    a = (pos[:, None] * rope_frequencies(d_head, base)[None, :]).astype(dtype)  # (seq_len, d_head/2)
    c, s = np.cos(a), np.sin(a)
    x = x.astype(dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * c - odd * s
    out[..., 1::2] = even * s + odd * c
    return out


def relative_property_error(d_head: int = 64, base: float = 10000.0, max_position: int = 4096,
                            n_pairs: int = 200, seed: int = 0, dtype=np.float64) -> dict[str, float]:
    """Measure how exactly (R_m q) . (R_n k) depends on n - m alone, for random q, k, m, n.

    Compares, in `dtype`, the rotated dot product with q^T R_(n-m) k (rotation by the offset
    only) and with the same pair shifted by a random s (positions m+s, n+s). Returns the max
    absolute differences {"vs_offset_rotation", "vs_shifted_pair"} and the typical |score|.
    """
    check_length(max_position, "The largest position", limit=1_000_000)
    rng = np.random.default_rng(seed)
    d_head = check_even_dim(d_head, "d_head")
    q = rng.standard_normal((n_pairs, d_head))
    k = rng.standard_normal((n_pairs, d_head))
    m = rng.integers(0, max_position, n_pairs)
    n = rng.integers(0, max_position, n_pairs)
    s = rng.integers(0, max_position, n_pairs)

    def rot(x, p):  # row t of x rotated by its own position p[t]
        return apply_rope(x, p, base, dtype)

    score = np.sum(rot(q, m) * rot(k, n), axis=1)
    by_offset = np.sum(q.astype(dtype) * rot(k, n - m), axis=1)  # q^T R_(n-m) k
    shifted = np.sum(rot(q, m + s) * rot(k, n + s), axis=1)
    return {
        "vs_offset_rotation": float(np.max(np.abs(score - by_offset))),
        "vs_shifted_pair": float(np.max(np.abs(score - shifted))),
        "typical_score": float(np.median(np.abs(score))),
    }


def score_decay(d_head: int = 64, base: float = 10000.0, max_distance: int = 512,
                n_samples: int = 2000, seed: int = 0) -> dict[str, np.ndarray]:
    """Score q_m . k_n as a function of the distance n - m = 0 .. max_distance, three cases.

    All curves are divided by d_head so that aligned vectors score 1 at distance 0.
    - "aligned": q = k = (1, ..., 1): the score is mean_i cos(distance * theta_i); it decays
      (with ripples) as the distance grows.
    - "bound": the paper's relative upper bound (1/(d/2)) sum_j |sum_{i<j} e^(i distance theta_i)|
      (Su et al. 2021, sec. 3.4.3), divided by its value at distance 0; it also decays.
    - "random_mean" / "random_std": q and k independent standard normal vectors: the mean
      score over n_samples pairs is ~0 at every distance (no decay), with a spread of ~1/sqrt(d).
    Returns those arrays plus "distance".
    """
    d_head = check_even_dim(d_head, "d_head")
    check_length(max_distance + 1, "The largest distance + 1", limit=100_000)
    theta = rope_frequencies(d_head, base)
    dist = np.arange(max_distance + 1, dtype=np.float64)
    ang = dist[None, :] * theta[:, None]  # (d/2, D)
    aligned = np.cos(ang).mean(axis=0)
    partial = np.cumsum(np.exp(1j * ang), axis=0)  # S_j for j = 1 .. d/2
    bound = np.abs(partial).mean(axis=0)
    bound = bound / bound[0]  # scaled to 1 at distance 0, like the other curves
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_samples, d_head))
    k = rng.standard_normal((n_samples, d_head))
    # q . R_dist k per pair: (q0 k0 + q1 k1) cos + (q1 k0 - q0 k1) sin
    a = q[:, 0::2] * k[:, 0::2] + q[:, 1::2] * k[:, 1::2]  # (N, d/2)
    b = q[:, 1::2] * k[:, 0::2] - q[:, 0::2] * k[:, 1::2]
    scores = (a @ np.cos(ang) + b @ np.sin(ang)) / d_head  # (N, D)
    return {"distance": dist, "aligned": aligned, "bound": bound,
            "random_mean": scores.mean(axis=0), "random_std": scores.std(axis=0)}


def rope_attention_demo(seq_len: int = 16, d_head: int = 16, base: float = 10000.0,
                        content: str = "repeated", strength: float = 8.0, seed: int = 0) -> dict[str, np.ndarray]:
    """Attention weights (seq_len, seq_len) of one head without and with RoPE.

    content="repeated": the same token at every position, with q = k (a token that looks for
    tokens like itself; every rotation pair gets the same share of its length, in a seeded
    random direction); `strength` is its raw score q.k/sqrt(d_head) at distance 0.
    Without positions every row is the same uniform row; with RoPE each row peaks at the
    query's own position and the pattern depends only on the offset.
    content="random": seeded random q and k per position.
    Returns {"plain", "rope"} weights and the rotated "q_rope", "k_rope".
    """
    seq_len = check_length(seq_len, "The sequence length", limit=512)
    d_head = check_even_dim(d_head, "d_head")
    rng = np.random.default_rng(seed)
    if content == "repeated":
        phase = rng.uniform(0, 2 * np.pi, d_head // 2)
        x = np.empty(d_head)
        x[0::2], x[1::2] = np.cos(phase), np.sin(phase)  # unit length per pair
        x *= np.sqrt(strength * np.sqrt(d_head) / (d_head // 2))  # q.k/sqrt(d_head) = strength
        q = np.tile(x, (seq_len, 1))
        k = q.copy()
    elif content == "random":
        q = rng.standard_normal((seq_len, d_head))
        k = rng.standard_normal((seq_len, d_head))
    else:
        raise BadInput(f"content must be 'repeated' or 'random', got {content!r}.")
    v = np.eye(seq_len, d_head)  # values are irrelevant here; only the weights are shown
    pos = np.arange(seq_len)
    qr, kr = apply_rope(q, pos, base), apply_rope(k, pos, base)
    _, plain = scaled_dot_product(q, k, v)
    _, rope = scaled_dot_product(qr, kr, v)
    return {"plain": plain, "rope": rope, "q_rope": qr, "k_rope": kr}


def random_query_key(d_head: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One seeded standard-normal query and key, (d_head,) each."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(d_head), rng.standard_normal(d_head)


def offset_scores(q: np.ndarray, k: np.ndarray, m: int, n: int, s: int, base: float = 10000.0) -> tuple[float, float, float]:
    """The RoPE score three ways, equal to rounding: (R_m q).(R_n k), (R_(m+s) q).(R_(n+s) k), q.(R_(n-m) k).

    q, k: (d_head,) vectors; m, n: query and key positions; s: a shift applied to both.
    """
    def rot(x, p):  # (d_head,) rotated to position p
        return apply_rope(np.asarray(x)[None], [p], base)[0]

    return float(rot(q, m) @ rot(k, n)), float(rot(q, m + s) @ rot(k, n + s)), float(q @ rot(k, n - m))


def position_scores(q: np.ndarray, k: np.ndarray, n_positions: int, base: float = 10000.0) -> np.ndarray:
    """(n_positions, n_positions) scores [m, n] = (R_m q).(R_n k) of one q and one k placed at every position.

    q, k: (d_head,). The matrix is constant along each diagonal (it depends on n - m alone).
    """
    pos = np.arange(n_positions)
    return apply_rope(np.tile(q, (n_positions, 1)), pos, base) @ apply_rope(np.tile(k, (n_positions, 1)), pos, base).T
