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

Which modules hold these parts differs by architecture: FAMILIES maps a transformers model_type to
their paths. Models outside it get a plain message naming the families covered."""
from __future__ import annotations

from dataclasses import dataclass

from attnviz.errors import BadInput
from attnviz.hooks import module_at


@dataclass(frozen=True)
class Family:
    layer: str  # the block; its input is the residual stream x
    value: str  # the value projection: output (batch, seq, kv_heads * d_head) = x W_V + b_V
    out: str  # the attention output projection W_O (+ b_O)
    norm_after: str | None = None  # post-norm: the LayerNorm over x + attention output
    norm_before: str | None = None  # pre-norm: the norm the attention reads x through
    stack: str = "encoder"  # which attention the family decomposes (self-attention of the encoder/decoder)

    @property
    def post_norm(self) -> bool:
        return self.norm_after is not None


_BERT = Family("encoder.layer.{i}", "encoder.layer.{i}.attention.self.value",
               "encoder.layer.{i}.attention.output.dense", norm_after="encoder.layer.{i}.attention.output.LayerNorm")
_LLAMA = Family("layers.{i}", "layers.{i}.self_attn.v_proj", "layers.{i}.self_attn.o_proj",
                norm_before="layers.{i}.input_layernorm", stack="decoder")
FAMILIES: dict[str, Family] = {
    "bert": _BERT, "roberta": _BERT, "xlm-roberta": _BERT, "electra": _BERT, "camembert": _BERT,
    "llama": _LLAMA, "mistral": _LLAMA, "qwen2": _LLAMA,
    "bart": Family("encoder.layers.{i}", "encoder.layers.{i}.self_attn.v_proj", "encoder.layers.{i}.self_attn.out_proj",
                   norm_after="encoder.layers.{i}.self_attn_layer_norm"),
    "t5": Family("encoder.block.{i}", "encoder.block.{i}.layer.0.SelfAttention.v",
                 "encoder.block.{i}.layer.0.SelfAttention.o", norm_before="encoder.block.{i}.layer.0.layer_norm"),
}
# attnviz's own from-scratch transformer (models/scratch.py): pre-norm LayerNorm blocks
SCRATCH = Family("layers.{i}", "layers.{i}.attn.v_proj", "layers.{i}.attn.out_proj", norm_before="layers.{i}.ln1")


def covered() -> str:
    """The model families the contribution maths covers, for messages."""
    return "BERT-style encoders (BERT, RoBERTa, ELECTRA), Llama-style decoders (Llama, Mistral, Qwen2), " \
           "the encoders of BART and T5, and attnviz's own toy models"


def family_of(model) -> Family:
    from attnviz.models.scratch import ScratchTransformer

    if isinstance(model, ScratchTransformer):
        return SCRATCH
    model_type = getattr(model.config, "model_type", "")
    if model_type not in FAMILIES:
        raise BadInput(f"Contributions are worked out block by block, and this app knows the blocks of {covered()}. "
                       f"A {model_type or 'this'} model is not among them, so only its attention weights are shown.")
    return FAMILIES[model_type]


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


def _module(model, path: str):
    module = module_at(model, path)
    if module is not None:
        return module
    raise BadInput(f"The module {path} was not found in this model, so its contributions cannot be worked out.")


def _linear(module):
    """(weight (out, in), bias (out,)) of a linear layer."""
    import torch

    w = module.weight.detach()
    b = module.bias.detach() if getattr(module, "bias", None) is not None else torch.zeros(w.shape[0], dtype=w.dtype)
    return w.float(), b.float()


def record(model, forward, n_layers: int, n_heads: int):
    """Run `forward()` (which calls the model once and returns its per-layer attention tensors,
    each (1, head, q, k)) with hooks that keep every block's parts; returns (forward's return,
    [LayerParts per layer]). The caller holds the model's lock."""
    import torch

    fam = family_of(model)
    kept: dict[tuple, object] = {}

    def keep_input(name):
        def hook(module, args, kwargs):
            kept[name] = (args[0] if args else kwargs["hidden_states"]).detach()
        return hook

    def keep_output(name, with_input=False):
        def hook(module, args, output):
            kept[name] = (output[0] if isinstance(output, tuple) else output).detach()
            if with_input:
                kept[name + ("in",)] = args[0].detach()
        return hook

    handles = []
    try:
        for i in range(n_layers):
            handles.append(_module(model, fam.layer.format(i=i)).register_forward_pre_hook(
                keep_input(("x", i)), with_kwargs=True))
            handles.append(_module(model, fam.value.format(i=i)).register_forward_hook(keep_output(("v", i))))
            handles.append(_module(model, fam.out.format(i=i)).register_forward_hook(keep_output(("o", i))))
            if fam.norm_after:
                handles.append(_module(model, fam.norm_after.format(i=i)).register_forward_hook(
                    keep_output(("ln", i), with_input=True)))
        with torch.inference_mode():
            returned, attentions = forward()
    finally:
        for h in handles:
            h.remove()

    layers = []
    for i in range(n_layers):
        if ("x", i) not in kept or ("v", i) not in kept:
            raise BadInput("The model ran without passing through its attention blocks as expected, so its "
                           "contributions cannot be worked out.")
        att = attentions[i][0].detach().float()  # (head, q, k)
        x = kept[("x", i)][0].float()  # (seq, d_model)
        w_out, b_out = _linear(_module(model, fam.out.format(i=i)))
        v = kept[("v", i)][0].float()  # (seq, kv_heads * d_head)
        d_head = w_out.shape[1] // n_heads
        v = v.view(v.shape[0], -1, d_head)  # (seq, kv_heads, d_head)
        if v.shape[1] != n_heads:  # grouped-query attention: kv head g serves query heads g*groups ...
            v = v.repeat_interleave(n_heads // v.shape[1], dim=1)
        norm = None
        if fam.norm_after:
            ln = _module(model, fam.norm_after.format(i=i))
            norm = (ln.weight.detach().float(), ln.bias.detach().float(), float(ln.eps), kept[("ln", i, "in")][0].float())
            y = kept[("ln", i)][0].float()
        else:
            y = x + kept[("o", i)][0].float()
        layers.append(LayerParts(attention=att, values=v, w_out=w_out, b_out=b_out, x=x, y=y, norm=norm))
    return returned, layers
