"""Gradient attributions with Captum: gradient x input and integrated gradients with respect to the
word embeddings (position and type embeddings are added inside the model, as usual)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from attnviz import progress
from attnviz.errors import BadInput

MIN_STEPS, MAX_STEPS = 1, 512
DEFAULT_STEPS = 32
# Bytes one integrated-gradients batch may hold for the saved activations (estimated): bounds
# captum's internal_batch_size, so 512-token inputs run one or two interpolation points at a time.
BATCH_BYTES = 1 << 30


Cancelled = progress.Cancelled  # the one cancellation error (attnviz.progress)


@dataclass(frozen=True)
class Attribution:
    """One gradient method's attribution of the target to every input token.

    per_token: float64 (n,) SIGNED sum of the attribution over the embedding dimension: positive =
    the token's embedding pushes the output up (for integrated gradients: relative to the baseline).
    norm: float64 (n,) L2 norm of the attribution over the embedding dimension (unsigned).
    """

    method: str
    per_token: np.ndarray
    norm: np.ndarray
    f_input: float  # f(x)
    f_baseline: float | None = None  # f(baseline); integrated gradients only
    delta: float | None = None  # captum's convergence delta: sum of attributions - (f(x) - f(baseline))
    steps: int | None = None
    baseline: str | None = None  # what the path starts from, in words (targets.Scorer.baseline_label)

    @property
    def completeness_error(self) -> float | None:
        """|delta| / |f(x) - f(baseline)|: 0 when the attributions add up exactly (integrated gradients)."""
        if self.delta is None or self.f_baseline is None:
            return None
        gap = abs(self.f_input - self.f_baseline)
        return abs(self.delta) / gap if gap > 0 else (0.0 if self.delta == 0 else math.inf)


def check_steps(steps) -> int:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not MIN_STEPS <= steps <= MAX_STEPS:
        raise BadInput(f"Integrated gradients needs from {MIN_STEPS} to {MAX_STEPS} steps (it was {steps}). "
                       "Each step is one forward and backward pass, so the cost grows linearly with the steps; "
                       "the page shows how far the attributions are from adding up, which more steps reduce.")
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
    """Integrated gradients exactly as captum.attr.IntegratedGradients computes them (its Gauss-Legendre
    points on the straight path) from the scorer's baseline (targets.Scorer.baseline) to the input's word
    embeddings. The attributions add up to f(x) - f(baseline) up to `delta`, which depends on the model
    and the steps: read it (Attribution.completeness_error) rather than assume it is small.

    report(done, total) is called after each batch of interpolation points; a set `cancel` Event stops
    the run between batches (raises Cancelled)."""
    import torch
    from captum.attr import IntegratedGradients

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
    baseline = scorer.baseline_embeds.clone()
    with scorer.lock, torch.inference_mode(False), torch.enable_grad():
        attr, delta = IntegratedGradients(forward).attribute(
            x, baselines=baseline, n_steps=steps, method="gausslegendre", internal_batch_size=ibs,
            return_convergence_delta=True)
    per, norm = _per_token(attr)
    return Attribution("integrated gradients", per, norm, scorer.value(), scorer.value(baseline),
                       float(delta.reshape(-1)[0]), steps, scorer.baseline_label)
