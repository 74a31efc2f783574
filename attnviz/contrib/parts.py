"""The parts of each attention block that the contribution maths needs, recorded during one forward.

Per layer l and query head h (shapes after the batch axis is dropped):
  attention  (head, query, key)        alpha^h_ij, the softmax weights
  values     (key, head, d_head)       x_j W_V^h + b_V^h (grouped kv heads repeated to their query heads)
  w_out      (d_model, head * d_head)  W_O, the output projection; b_out (d_model,) its bias (zeros if none)
  x          (seq, d_model)            the block's input: the residual stream the attention adds to
  norm       post-norm blocks only: the LayerNorm applied to x + attention output (gamma, beta, eps) and
             its input, so that the block output y = LN(x + sum_j sum_h alpha f_h(x_j) + b_O)
  y          (seq, d_model)            the attention block's output as the model computed it: the
             LayerNorm's output (post-norm) or x + attention output (pre-norm)

f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h is the value vector of token j as head h writes it into the
residual stream (Kobayashi et al. 2020). Pre-norm blocks read x_j through their norm before W_V, so
that norm is inside f; post-norm blocks normalise after the residual add.

The parts are read at the model adapter's hook points (attnviz.models.adapter): blocks.{i}.hook_resid_pre (x),
attn.hook_v (values), attn.hook_pattern (weights), hook_attn_out (the output projection's output) and, post-norm,
hook_resid_mid (y); W_O and the norm come from the family table. Families whose blocks the maths does not model
say why in the table; they get a plain message."""
from __future__ import annotations

from dataclasses import dataclass

from attnviz.errors import BadInput
from attnviz.models import families
from attnviz.models.adapter import run
from attnviz.models.families import Family

VIEW = "contributions"  # the family table's name of this view


def covered() -> str:
    """The model families the contribution maths covers, for messages."""
    names = [f.name for f in families.FAMILIES if f.supports(VIEW)]
    return ", ".join(names[:-1]) + " and " + names[-1]


def family_of(model) -> Family:
    """The family row of `model`; BadInput naming the covered families when the maths does not cover it."""
    try:
        fam = families.family_of(model)
        why = fam.why_not(VIEW)
    except BadInput as e:
        why = str(e)
    if why:
        raise BadInput(f"Contributions are worked out block by block, and this app knows the blocks of {covered()}. "
                       f"A {families.model_type(model)} model is not among them, so only its attention weights are "
                       f"shown. {why}")
    return fam


def supports(model) -> bool:
    try:
        family_of(model)
        return True
    except BadInput:
        return False


@dataclass
class LayerParts:
    attention: "object"  # torch (head, query, key)
    values: "object"  # torch (key, head, d_head)
    w_out: "object"  # torch (d_model, head * d_head)
    b_out: "object"  # torch (d_model,)
    x: "object"  # torch (seq, d_model)
    y: "object"  # torch (seq, d_model)
    norm: tuple | None = None  # post-norm: (gamma, beta, eps, pre-norm sum (seq, d_model))


def _linear(module):
    """(weight (out, in), bias (out,)) of a linear layer."""
    import torch

    w = module.weight.detach()
    b = module.bias.detach() if getattr(module, "bias", None) is not None else torch.zeros(w.shape[0], dtype=w.dtype)
    return w.float(), b.float()


def record(loaded, inputs, *, part: str = "model", **kwargs):
    """One forward of `loaded` (a LoadedModel) on `inputs` through the model adapter, keeping every block's
    parts: (the model's output, [LayerParts per layer]). inputs, part and kwargs go to `adapter.run`
    (part="encoder" for attnviz's toy models, whose attention weights are what their `encode` returns)."""
    model, n_heads = loaded.model, int(loaded.facts.n_heads)
    fam = family_of(model)
    hooks = ["blocks.*.hook_resid_pre", "blocks.*.attn.hook_v", "blocks.*.attn.hook_pattern", "blocks.*.hook_attn_out"]
    if fam.post_norm:
        hooks.append("blocks.*.hook_resid_mid")  # LN(x + attention output)
    out, rec = run(loaded, inputs, hooks=hooks, part=part, **kwargs)
    returned = out[1] if isinstance(out, tuple) else None  # the toy model's encode: (memory, weights per layer)
    layers = []
    for i in range(families.n_blocks(model, fam=fam)):
        p = f"blocks.{i}"
        if f"{p}.hook_resid_pre" not in rec or f"{p}.attn.hook_v" not in rec:
            raise BadInput("The model ran without passing through its attention blocks as expected, so its "
                           "contributions cannot be worked out.")
        att = rec.get(f"{p}.attn.hook_pattern")
        att = (att if att is not None else returned[i])[0].detach().float()  # (head, q, k)
        x = rec[f"{p}.hook_resid_pre"][0].float()  # (seq, d_model)
        w_out, b_out = _linear(families.module(model, "out", i, fam=fam))
        v = rec[f"{p}.attn.hook_v"][0].float()  # (seq, kv_heads, d_head)
        if v.shape[1] != n_heads:  # grouped-query attention: kv head g serves query heads g*groups ...
            v = v.repeat_interleave(n_heads // v.shape[1], dim=1)
        o = rec[f"{p}.hook_attn_out"][0].float()  # (seq, d_model)
        norm = None
        if fam.post_norm:
            ln = families.module(model, "norm_attn", i, fam=fam)
            norm = (ln.weight.detach().float(), ln.bias.detach().float(), float(ln.eps), o + x)
            y = rec[f"{p}.hook_resid_mid"][0].float()
        else:
            y = x + o
        layers.append(LayerParts(attention=att, values=v, w_out=w_out, b_out=b_out, x=x, y=y, norm=norm))
    return out, layers
