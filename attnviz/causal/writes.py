"""What one head writes: its output at the last position read through the final norm (its scale frozen at the
final residual stream's) and the unembedding, as the tokens it promotes and suppresses most on this input."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.causal.dla import _weight_by_head
from attnviz.causal.patching import inputs_of, last_only, require_causal, require_head
from attnviz.models.adapter import run
from attnviz.models.families import family_of, module
from attnviz.types import LoadedModel


@dataclass(frozen=True)
class Writes:
    """The head's direct effect on every next-token logit at the last position, its extremes first."""

    promoted: tuple  # ((token id, logit change), ...) largest first
    suppressed: tuple  # ((token id, logit change), ...) most negative first
    logits: np.ndarray  # (vocab,) the head's direct logit change for every token


def frozen_norm(loaded: LoadedModel, final_resid):
    """v (..., d_model) -> the final norm's linear part for the frozen scale of final_resid (d_model,)."""
    import torch

    fam = family_of(loaded.model)
    norm = module(loaded.model, "final_norm", fam=fam)
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6))
    x = final_resid.double()
    weight = norm.weight.double()
    if fam.norm == "rmsnorm":
        scale = torch.rsqrt(x.pow(2).mean() + eps)
        return lambda v: weight * v.double() * scale
    scale = torch.rsqrt(x.var(unbiased=False) + eps)
    return lambda v: weight * (v.double() - v.double().mean(-1, keepdim=True)) * scale


def head_writes(loaded: LoadedModel, ids, layer: int, head: int, k: int = 10) -> Writes:
    """The logit change head (layer, head) makes directly to every token at the last position of the prompt
    `ids`: its output through its slice of the output projection, the final norm with its scale frozen and the
    unembedding (no biases). BadInput for a head the model does not have."""
    import torch

    require_causal(loaded)
    require_head(loaded, layer, head)
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    last = f"blocks.{n_layers - 1}.hook_resid_post"
    z_name = f"blocks.{layer}.attn.hook_z"
    _, rec = run(loaded, inputs_of(ids), hooks=[z_name, last], **last_only(loaded))
    with torch.inference_mode():
        z = rec[z_name][0, -1, head].double()  # (d_head,)
        out = z @ _weight_by_head(module(loaded.model, "out", layer), n_heads)[head].double()  # (d_model,)
        normed = frozen_norm(loaded, rec[last][0, -1])(out)
        logits = (loaded.model.get_output_embeddings().weight.double() @ normed).numpy()  # (vocab,)
    order = np.argsort(logits, kind="stable")
    return Writes(tuple((int(i), float(logits[i])) for i in order[::-1][:k]),
                  tuple((int(i), float(logits[i])) for i in order[:k]), logits)
