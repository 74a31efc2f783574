"""Attribution patching: the first-order estimate of every patch at once, (clean - corrupted activation) ·
gradient of the task's score in the corrupted run, from one backward pass."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.causal.patching import CACHED, Runs, require_task, scored_run
from attnviz.causal.tasks import Metric, Pair
from attnviz.types import LoadedModel


@dataclass(frozen=True)
class PatchEstimate:
    """Estimated normalised metric after each patch (0 = corrupted, 1 = clean), as patching.py measures it."""

    residual: np.ndarray  # (layer, pos): the residual stream entering block `layer` at `pos`
    heads: np.ndarray  # (layer, head): one head's output at every position
    mlps: np.ndarray  # (layer,): one MLP's output at every position
    metric: Metric  # the clean and corrupted scores


def attribution_patching(loaded: LoadedModel, pair: Pair, runs: Runs | None = None) -> PatchEstimate:
    """One clean forward (skipped when `runs` holds its activations), one corrupted forward with gradients and one
    backward pass: the linear estimate of patching each residual position, head and MLP."""
    import torch

    require_task(loaded, pair)
    if runs is None:
        _, rec, value = scored_run(loaded, pair.clean, pair, hooks=CACHED)
        clean, clean_diff = rec.acts, float(value[0])
    else:
        clean, clean_diff = runs.clean, runs.metric.clean
    _, rec, value = scored_run(loaded, pair.corrupted, pair, hooks=CACHED, grad=True)
    diff = value[0]
    names = sorted(rec.acts)
    grads = dict(zip(names, torch.autograd.grad(diff, [rec[n] for n in names])))
    metric = Metric(clean_diff, float(diff.detach()))
    scale = metric.clean - metric.corrupted
    n_layers = loaded.facts.n_layers

    def gain(name, dims):
        """(clean - corrupted) · gradient summed over `dims`, on the normalised scale."""
        with torch.no_grad():
            change = (clean[name] - rec[name].detach()) * grads[name]
            return (change.sum(dim=dims)[0] / scale).double().numpy()

    residual = np.stack([gain(f"blocks.{i}.hook_resid_pre", (-1,)) for i in range(n_layers)])  # (layer, pos)
    heads = np.stack([gain(f"blocks.{i}.attn.hook_z", (1, 3)) for i in range(n_layers)])  # (layer, head)
    mlps = np.array([float(gain(f"blocks.{i}.hook_mlp_out", (1, 2))) for i in range(n_layers)])
    return PatchEstimate(residual, heads, mlps, metric)
