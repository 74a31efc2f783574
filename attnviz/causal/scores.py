"""The bilinear split of one head's pre-softmax score: which parts of the query's residual stream meet which parts
of the key's, with the attention norm's scale frozen at each position."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from attnviz.causal.patching import inputs_of, require_causal
from attnviz.errors import BadInput
from attnviz.models.adapter import run
from attnviz.models.families import family_of, module
from attnviz.types import LoadedModel


@dataclass(frozen=True)
class ScoreSplit:
    """terms[a, b]: the score's part from query-side component a and key-side component b; they add up to
    `score`, the head's q · k × scaling before the mask and the softmax."""

    terms: np.ndarray  # (component, component)
    labels: tuple  # "embeddings", "attn 0", "mlp 0", ..., "bias" (the norm's and projections' biases)
    score: float


def _frozen_norm(norm, x, kind: str):
    """c (..., d) -> the norm's linear part for the frozen scale of x (d,), and the norm's bias (d,) or None."""
    import torch

    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6))
    if kind == "rmsnorm":
        scale = torch.rsqrt(x.pow(2).mean() + eps)
        return (lambda c: norm.weight * c * scale), None
    scale = torch.rsqrt(x.var(unbiased=False) + eps)
    return (lambda c: norm.weight * (c - c.mean(-1, keepdim=True)) * scale), getattr(norm, "bias", None)


def split_score(loaded: LoadedModel, ids, layer: int, head: int, query: int, key: int) -> ScoreSplit:
    """The score of head `head` of block `layer` from position `query` to position `key` of the prompt `ids`,
    split over the components of the residual stream entering the block (embeddings, every earlier block's
    attention and MLP outputs, biases) on the query side and on the key side. Needs a pre-norm causal LM with
    separate query and key projections (Llama's family); BadInput otherwise."""
    import torch

    require_causal(loaded)
    fam = family_of(loaded.model)
    facts = loaded.facts
    if fam.post_norm or fam.parallel or fam.stack.q is None or not fam.plain_scores:
        raise BadInput(f"The score split needs separate query and key projections read through a norm before each "
                       f"block and plain q·k scores, which a {fam.name} model does not have.")
    if not (0 <= layer < facts.n_layers and 0 <= head < facts.n_heads and 0 <= key <= query < len(ids)):
        raise BadInput(f"Choose a block below {facts.n_layers}, a head below {facts.n_heads} and a key position "
                       f"at or before the query position, both below {len(ids)}.")
    points = ["blocks.0.hook_resid_pre", f"blocks.{layer}.hook_resid_pre", f"blocks.{layer}.attn.hook_q",
              f"blocks.{layer}.attn.hook_k"] + [f"blocks.{j}.hook_{w}_out" for j in range(layer) for w in ("attn", "mlp")]
    _, rec = run(loaded, inputs_of(ids), hooks=points, kernel="eager")
    call = rec.calls[f"blocks.{layer}.attn"]
    labels = ("embeddings",) + tuple(f"{w} {j}" for j in range(layer) for w in ("attn", "mlp"))
    with torch.inference_mode():
        parts = torch.stack([rec["blocks.0.hook_resid_pre"][0]] + [rec[f"blocks.{j}.hook_{w}_out"][0]
                                                                   for j in range(layer) for w in ("attn", "mlp")])
        resid = rec[f"blocks.{layer}.hook_resid_pre"][0]  # (n, d_model) = parts summed
        norm = module(loaded.model, "norm_attn", layer, fam=fam)
        q_proj, k_proj = module(loaded.model, "q", layer, fam=fam), module(loaded.model, "k", layer, fam=fam)
        d_head = rec[f"blocks.{layer}.attn.hook_q"].shape[-1]
        kv_head = head // (facts.n_heads // max(1, facts.n_kv_heads))
        rotate = _rotation(loaded, call.module, len(ids), d_head)

        def side(pos, proj, h, which):
            lin, norm_bias = _frozen_norm(norm, resid[pos], fam.norm)
            vecs = proj.weight.view(-1, d_head, proj.in_features)[h] @ lin(parts[:, pos]).T  # (d_head, component)
            bias = torch.zeros(d_head)
            if norm_bias is not None:
                bias = bias + proj.weight.view(-1, d_head, proj.in_features)[h] @ norm_bias
            if proj.bias is not None:
                bias = bias + proj.bias.view(-1, d_head)[h]
            vecs = torch.cat([vecs, bias[:, None]], 1).T  # (component + 1, d_head)
            return rotate(vecs, pos, which)

        qs, ks = side(query, q_proj, head, "q"), side(key, k_proj, kv_head, "k")
        terms = (qs.double() @ ks.double().T) * call.scaling  # (component + 1, component + 1)
        q, k = rec[f"blocks.{layer}.attn.hook_q"][0, query, head], rec[f"blocks.{layer}.attn.hook_k"][0, key, kv_head]
        score = float((q.double() @ k.double()) * call.scaling)
    return ScoreSplit(terms.numpy(), labels + ("bias",), score)


def _rotation(loaded: LoadedModel, attention, n: int, d_head: int):
    """vecs (m, d_head) at position p -> the same vectors rotated as the family's RoPE rotates queries ("q") or
    keys ("k") there; the identity for models without rotary positions."""
    import torch

    rotary = getattr(getattr(loaded.model, "base_model", loaded.model), "rotary_emb", None)
    apply = getattr(sys.modules.get(type(attention).__module__), "apply_rotary_pos_emb", None)
    if family_of(loaded.model).positions != "rope":
        return lambda vecs, pos, which: vecs
    if rotary is None or apply is None:
        raise BadInput("The score split could not find this model's rotary position embedding.")
    positions = torch.arange(n)[None]
    cos, sin = rotary(torch.zeros(1, n, d_head), positions)  # (1, n, d_head)

    def rotate(vecs, pos, which):
        x = vecs[None, :, None, :]  # (1, m, 1, d_head): (batch, head, pos, d) with the m vectors as heads
        q, k = apply(x, x, cos[:, pos:pos + 1], sin[:, pos:pos + 1])
        return (q if which == "q" else k)[0, :, 0]

    return rotate
