"""Bahdanau (additive) and Luong (dot, general, concat) alignment scores, with their costs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.attention import causal_mask, softmax
from attnviz.errors import BadInput

# Encoder states h_1..h_4 (d_h = 3) from the seed's Bahdanau worked example; the decoder
# states are our own (d_s = 3), chosen so each one leans towards a different source state.
ENCODER_STATES = np.array([[0.2, 0.5, -0.1], [0.8, -0.3, 0.4], [-0.1, 0.7, 0.6], [0.3, 0.1, -0.5]])
DECODER_STATES = np.array([[0.4, -0.2, 0.7], [0.3, 0.6, -0.4], [0.9, -0.5, 0.2]])
# variant -> its label (with its formula); VARIANTS in this order
LABELS = dict(bahdanau="Bahdanau (additive): vₐᵀ tanh(Wₐ s + Uₐ h)", dot="Luong dot: sᵀ h",
              general="Luong general: sᵀ Wₐ h", concat="Luong concat: vₐᵀ tanh(Wₐ [s; h])")
VARIANTS = tuple(LABELS)


@dataclass(frozen=True)
class VariantParams:
    """Seeded weights for every variant (shapes follow the seed's notation)."""

    w_a: np.ndarray  # (d_a, d_s) Bahdanau decoder projection
    u_a: np.ndarray  # (d_a, d_h) Bahdanau encoder projection
    v_a: np.ndarray  # (d_a,) Bahdanau output vector
    w_general: np.ndarray  # (d_s, d_h) Luong general bilinear matrix
    w_concat: np.ndarray  # (d_a, d_s + d_h) Luong concat projection
    v_concat: np.ndarray  # (d_a,) Luong concat output vector


def random_variant_params(d_s: int, d_h: int, d_a: int = 2, seed: int = 0, gain: float = 2.0) -> VariantParams:
    """Seeded weights; gain scales them so the alignments are not all flat."""
    if min(d_s, d_h, d_a) < 1:
        raise BadInput("All dimensions must be at least 1.")
    rng = np.random.default_rng(seed)
    n = lambda *shape: rng.standard_normal(shape) * gain / np.sqrt(shape[-1])  # noqa: E731
    return VariantParams(w_a=n(d_a, d_s), u_a=n(d_a, d_h), v_a=n(d_a), w_general=n(d_s, d_h),
                         w_concat=n(d_a, d_s + d_h), v_concat=n(d_a))


def alignment_scores(variant: str, s: np.ndarray, h: np.ndarray, p: VariantParams) -> np.ndarray:
    """Scores e (T_y, T_x) of decoder states s (T_y, d_s) against encoder states h (T_x, d_h)."""
    s = np.asarray(s, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    if variant == "bahdanau":
        # (T_y, 1, d_a) + (1, T_x, d_a) -> tanh -> dot v_a
        return np.tanh((s @ p.w_a.T)[:, None, :] + (h @ p.u_a.T)[None, :, :]) @ p.v_a
    if variant == "dot":
        if s.shape[1] != h.shape[1]:
            raise BadInput(f"Luong dot needs decoder and encoder states of the same width; "
                           f"they are {s.shape[1]} and {h.shape[1]}. Use 'general' to bridge them.")
        return s @ h.T
    if variant == "general":
        return s @ p.w_general @ h.T
    if variant == "concat":
        t_y, t_x = len(s), len(h)
        pairs = np.concatenate([np.repeat(s[:, None, :], t_x, 1), np.repeat(h[None, :, :], t_y, 0)], axis=-1)
        return np.tanh(pairs @ p.w_concat.T) @ p.v_concat  # (T_y, T_x)
    raise BadInput(f"Unknown variant '{variant}'; choose one of {', '.join(VARIANTS)}.")


def alignment(variant: str, s, h, p: VariantParams) -> tuple[np.ndarray, np.ndarray]:
    """(weights (T_y, T_x), contexts (T_y, d_h)): softmax over source positions, then sum of h."""
    w = softmax(alignment_scores(variant, s, h, p), axis=-1)
    return w, w @ np.asarray(h, dtype=np.float64)


def n_params(variant: str, d_s: int, d_h: int, d_a: int) -> int:
    """Learned weights in the scoring function alone."""
    return {"bahdanau": d_a * d_s + d_a * d_h + d_a, "dot": 0, "general": d_s * d_h,
            "concat": d_a * (d_s + d_h) + d_a}[variant]


def cost_madds(variant: str, t_y: int, t_x: int, d_s: int, d_h: int, d_a: int) -> int:
    """Multiply-adds to score every (target, source) pair, projecting each state only once.

    Bahdanau and concat: project T_y decoder and T_x encoder states into d_a, then a d_a dot
    per pair (splitting W [s; h] = W1 s + W2 h makes concat cost the same). General:
    project the T_x encoder states with W_a, then a d_s dot per pair. Dot: a d dot per pair.
    """
    if variant in ("bahdanau", "concat"):
        return t_y * d_a * d_s + t_x * d_a * d_h + t_y * t_x * d_a
    if variant == "general":
        return t_x * d_s * d_h + t_y * t_x * d_s
    if variant == "dot":
        return t_y * t_x * d_s
    raise BadInput(f"Unknown variant '{variant}'.")


def pattern_masks(n_src: int, n_tgt: int) -> dict[str, np.ndarray]:
    """Which (query, key) pairs each attention kind allows: bool matrices, True = may attend.

    self: every source token sees every source token (n_src, n_src); cross: target queries
    see all source keys (n_tgt, n_src); causal: target token i sees targets 0..i (n_tgt, n_tgt).
    """
    return {"self": np.ones((n_src, n_src), dtype=bool), "cross": np.ones((n_tgt, n_src), dtype=bool),
            "causal": causal_mask(n_tgt)}
