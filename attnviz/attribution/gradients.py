"""Gradient attributions with Captum: gradient x input and integrated gradients with respect to the
word embeddings (position and type embeddings are added inside the model, as usual)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from attnviz.errors import AttnvizError, BadInput

MIN_STEPS, MAX_STEPS = 1, 512
DEFAULT_STEPS = 32
# Bytes one integrated-gradients batch may hold for the saved activations (estimated): bounds
# captum's internal_batch_size, so 512-token inputs run one or two interpolation points at a time.
BATCH_BYTES = 1 << 30


class Cancelled(AttnvizError):
    def __init__(self):
        super().__init__("Cancelled: the run stopped before it finished; press Run to start again.")


@dataclass(frozen=True)
class Attribution:
    """One gradient method's attribution of the target to every input token.

    per_token: float64 (n,) SIGNED sum of the attribution over the embedding dimension: positive =
    the token's embedding pushes the output up (relative to the zero-embedding baseline).
    norm: float64 (n,) L2 norm of the attribution over the embedding dimension (unsigned).
    """

    method: str
    per_token: np.ndarray
    norm: np.ndarray
    f_input: float  # f(x)
    f_baseline: float | None = None  # f(zero embeddings); integrated gradients only
    delta: float | None = None  # captum's convergence delta: sum of attributions - (f(x) - f(baseline))
    steps: int | None = None

    @property
    def completeness_error(self) -> float | None:
        """|delta| / |f(x) - f(baseline)|: 0 when the attributions add up exactly (integrated gradients)."""
        if self.delta is None or self.f_baseline is None:
            return None
        gap = abs(self.f_input - self.f_baseline)
        return abs(self.delta) / gap if gap > 0 else (0.0 if self.delta == 0 else math.inf)


# Integration points: Gauss-Legendre nodes s on [0, 1], moved towards the baseline as alpha = s**WARP (weights
# times d alpha / d s). The integral is the same; the points are not. Models that normalise with RMSNorm
# (Llama, SmolLM2) barely depend on the scale of their embeddings, so along the straight path from zero
# embeddings almost all of f(x) - f(0) changes within alpha < 0.001: evenly spread points miss it (18% off
# at 32 steps on a small Llama), warped points add up within 0.1%.
WARP = 3


def _warped_ig():
    from captum.attr import IntegratedGradients
    from captum.attr._utils.approximation_methods import approximation_parameters

    class WarpedIntegratedGradients(IntegratedGradients):
        """captum's IntegratedGradients on points alpha = s**WARP (s: the method's nodes on [0, 1])."""

        def _attribute(self, inputs, baselines, target=None, additional_forward_args=None, n_steps=50,
                       method="gausslegendre", step_sizes_and_alphas=None):
            if step_sizes_and_alphas is None:
                sizes_of, alphas_of = approximation_parameters(method)
                sizes, nodes = sizes_of(n_steps), alphas_of(n_steps)
            else:  # one internal batch's share of the nodes
                sizes, nodes = step_sizes_and_alphas
            warped = ([w * WARP * s ** (WARP - 1) for w, s in zip(sizes, nodes)], [s ** WARP for s in nodes])
            return super()._attribute(inputs, baselines, target, additional_forward_args, n_steps, method, warped)

    return WarpedIntegratedGradients


def check_steps(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not MIN_STEPS <= steps <= MAX_STEPS:
        raise BadInput(f"Integrated gradients needs from {MIN_STEPS} to {MAX_STEPS} steps (it was {steps}). "
                       "Each step is one forward and backward pass, so the cost grows linearly with the steps; "
                       f"{DEFAULT_STEPS} is usually enough for the attributions to add up within 1%.")
    return int(steps)


def batch_size(scorer, steps: int, budget: int = BATCH_BYTES) -> int:
    """Interpolation points per forward pass, from an estimate of the activations one point keeps for
    the backward pass: attention scores and weights (layer, head, n, n) plus ~16 (n, d) tensors per layer."""
    cfg = scorer.model.config
    layers = int(getattr(cfg, "num_hidden_layers", 12))
    heads = int(getattr(cfg, "num_attention_heads", 12))
    n, d = scorer.n, int(scorer.embeds.shape[-1])
    per_point = 4 * layers * (3 * heads * n * n + 16 * n * d)
    return int(max(1, min(steps, budget // max(per_point, 1))))


def _per_token(attr) -> tuple[np.ndarray, np.ndarray]:
    a = attr.detach()[0].double()  # (n, d)
    return a.sum(-1).numpy(), a.norm(dim=-1).numpy()


def input_x_gradient(scorer) -> Attribution:
    """Gradient x input (captum.attr.InputXGradient) of scorer's output w.r.t. the word embeddings."""
    import torch
    from captum.attr import InputXGradient

    with scorer.lock, torch.inference_mode(False), torch.enable_grad():
        x = scorer.embeds.clone().requires_grad_(True)  # our copy: the model's own tensors are never touched
        attr = InputXGradient(scorer).attribute(x)  # (1, n, d)
    per, norm = _per_token(attr)
    return Attribution("gradient x input", per, norm, scorer.value())


def integrated_gradients(scorer, steps: int = DEFAULT_STEPS, *, internal_batch_size: int | None = None,
                         report: Callable[[int, int], None] | None = None, cancel=None) -> Attribution:
    """Integrated gradients (captum.attr.IntegratedGradients, Gauss-Legendre points warped towards the
    baseline, see WARP) from the zero-embedding baseline to the input's word embeddings. The attributions
    add up to f(x) - f(0) up to `delta`.

    report(done, total) is called after each batch of interpolation points; a set `cancel` Event stops
    the run between batches (raises Cancelled)."""
    import torch

    steps = check_steps(steps)
    ibs = internal_batch_size or batch_size(scorer, steps)
    total = math.ceil(steps / ibs) + 2  # the batches of points, then f(x) and f(baseline) for the delta
    calls = [0]

    def forward(x):
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        out = scorer(x)
        calls[0] += 1
        if report is not None:
            report(min(calls[0], total), total)
        return out

    x = scorer.embeds.clone()
    baseline = torch.zeros_like(x)
    with scorer.lock, torch.inference_mode(False), torch.enable_grad():
        attr, delta = _warped_ig()(forward).attribute(
            x, baselines=baseline, n_steps=steps, internal_batch_size=ibs, return_convergence_delta=True)
    per, norm = _per_token(attr)
    return Attribution("integrated gradients", per, norm, scorer.value(), scorer.value(baseline),
                       float(delta.reshape(-1)[0]), steps)
