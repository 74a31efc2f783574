"""Direct logit attribution: each head's and each MLP's share of the last position's logit difference, read
through the final norm with its scale frozen at the final residual stream's and through the unembedding."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.causal.patching import inputs_of, last_logits, last_only, require_causal, require_head
from attnviz.causal.tasks import Pair, logit_diff
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from attnviz.models.families import family_of, module
from attnviz.types import LoadedModel


@dataclass(frozen=True)
class DirectAttribution:
    """Parts of the logit difference (answer - wrong) at the last position; they add up to `total`."""

    heads: np.ndarray  # (layer, head): each head's output through the output projection
    mlps: np.ndarray  # (layer,): each MLP's output
    embeddings: float  # the residual stream entering block 0 (token and position embeddings)
    biases: float  # the attention output projections' biases, the final norm's bias and the unembedding's bias
    total: float  # the model's own logit difference

    @property
    def parts_sum(self) -> float:
        return float(self.heads.sum() + self.mlps.sum() + self.embeddings + self.biases)


def _weight_by_head(proj, n_heads: int):
    """The output projection's weight as (head, d_head, d_model): input slice h maps head h's output."""
    weight = proj.weight if hasattr(proj, "in_features") else proj.weight.T  # (d_model, H * d_head); Conv1D: (in, out)
    d_model = weight.shape[0]
    return weight.T.reshape(n_heads, -1, d_model)  # (H, d_head, d_model)


def logit_direction(loaded: LoadedModel, final_resid, pair: Pair):
    """(g (d_model,), constant): the logit difference of the final residual stream x is g · x + constant, with
    the final norm's scale frozen at its value for `final_resid` (d_model,); exact at x = final_resid.
    BadInput when the model's final norm is neither a LayerNorm nor an RMSNorm of the usual form."""
    import torch

    fam = family_of(loaded.model)
    norm = module(loaded.model, "final_norm", fam=fam)
    head = loaded.model.get_output_embeddings()
    x = final_resid.double()
    weight = norm.weight.double()
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6))
    delta = (head.weight[pair.answer] - head.weight[pair.wrong]).double()  # (d_model,)
    constant = 0.0
    if getattr(head, "bias", None) is not None:
        constant += float(head.bias[pair.answer] - head.bias[pair.wrong])
    if fam.norm == "rmsnorm":
        scale = torch.rsqrt(x.pow(2).mean() + eps)
        g = weight * scale * delta
        normed = weight * x * scale
    else:
        scale = torch.rsqrt(x.var(unbiased=False) + eps)
        g = weight * scale * delta
        g = g - g.mean()  # the norm subtracts the mean: g · (c - mean c) = (g - mean g) · c
        normed = weight * (x - x.mean()) * scale
        if getattr(norm, "bias", None) is not None:
            constant += float(norm.bias.double() @ delta)
            normed = normed + norm.bias.double()
    if not torch.allclose(normed, norm(final_resid[None])[0].double(), rtol=1e-4, atol=1e-5):
        raise BadInput(f"The final norm of {loaded.facts.name} is not a plain LayerNorm or RMSNorm, so its scale "
                       "cannot be frozen and the logit difference cannot be split into parts.")
    return g, constant


def direct_attribution(loaded: LoadedModel, pair: Pair, which: str = "clean") -> DirectAttribution:
    """Each head's and MLP's direct contribution to the logit difference of the `which` ("clean" or
    "corrupted") prompt at its last position. BadInput for models that are not causal LMs or whose parts do not
    add up to their output (a logit scale or soft-capping, a final norm of another form)."""
    import torch

    require_causal(loaded)
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    last = f"blocks.{n_layers - 1}.hook_resid_post"
    out, rec = run(loaded, inputs_of(getattr(pair, which)), **last_only(loaded),
                   hooks=["blocks.0.hook_resid_pre", "blocks.*.attn.hook_z", "blocks.*.hook_mlp_out", last])
    total = float(logit_diff(last_logits(out)[0].double(), pair))
    heads = np.zeros((n_layers, n_heads))
    mlps = np.zeros(n_layers)
    with torch.inference_mode():
        g, constant = logit_direction(loaded, rec[last][0, -1], pair)
        biases = constant
        for i in range(n_layers):
            proj = module(loaded.model, "out", i)
            z = rec[f"blocks.{i}.attn.hook_z"][0, -1].double()  # (head, d_head)
            per_head = torch.einsum("hd,hdm->hm", z, _weight_by_head(proj, n_heads).double())  # (head, d_model)
            heads[i] = (per_head @ g).numpy()
            if getattr(proj, "bias", None) is not None:
                biases += float(proj.bias.double() @ g)
            mlps[i] = float(rec[f"blocks.{i}.hook_mlp_out"][0, -1].double() @ g)
        embeddings = float(rec["blocks.0.hook_resid_pre"][0, -1].double() @ g)
    found = DirectAttribution(heads, mlps, embeddings, biases, total)
    if abs(found.parts_sum - total) > 1e-3 * max(1.0, abs(total)):
        raise BadInput(f"The direct contributions of {loaded.facts.name}'s parts do not add up to its logit "
                       "difference (its output is not the final norm and unembedding of the residual stream alone), "
                       "so they cannot be shown as its parts.")
    return found


def by_source(loaded: LoadedModel, pair: Pair, layer: int, head: int, which: str = "clean") -> np.ndarray:
    """(pos,): head `head` of block `layer`'s direct logit attribution at the last position of the `which`
    prompt, split by the position it reads: its weight on that key times that key's value, through its slice of
    the output projection and the logit direction (final norm's scale frozen). The parts add up to the head's cell
    of direct_attribution."""
    import torch

    require_causal(loaded)
    require_head(loaded, layer, head)
    n_layers, n_heads = loaded.facts.n_layers, loaded.facts.n_heads
    at, last = f"blocks.{layer}.attn", f"blocks.{n_layers - 1}.hook_resid_post"
    _, rec = run(loaded, inputs_of(getattr(pair, which)), hooks=[f"{at}.hook_pattern", f"{at}.hook_v", last],
                 kernel="eager", **last_only(loaded))
    with torch.inference_mode():
        g, _ = logit_direction(loaded, rec[last][0, -1], pair)
        values = rec[f"{at}.hook_v"][0].double()  # (key, kv_head, d_head)
        v = values[:, head // (n_heads // values.shape[1])]  # the key/value head this head reads
        weights = rec[f"{at}.hook_pattern"][0, head, -1].double()  # (key,)
        w_o = _weight_by_head(module(loaded.model, "out", layer), n_heads)[head].double()  # (d_head, d_model)
        return ((weights[:, None] * v) @ w_o @ g).numpy()
