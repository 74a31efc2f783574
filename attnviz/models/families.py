"""The table of model families: where each family keeps its attention, norms and embeddings, and what it supports.

This module is the only place in attnviz that names a model's submodules. One frozen `Family` row per
family; a row's `stacks` say where the blocks live and, per block i, which module holds what (dotted paths
relative to the model's base model, "{i}" standing for the block index; `module_at` also tries the model
itself, for heads such as "lm_head"). The recording context (`attnviz.models.adapter`) turns these paths into
named hook points; ablation, contributions, the logit lens and the long-input recording read them from here.

Adding a family = one row in FAMILIES plus one test:
  1. print the module names of a small instance (`[n for n, _ in model.named_modules()]`) and fill a Family
     (its stacks with `_stack`, names relative to the block; copy the closest row with dataclasses.replace when
     only a few fields differ);
  2. list its `config.model_type` values in `model_types`;
  3. say in `not_supported` which views it cannot serve and why, one sentence each;
  4. the test: tests/unit/test_families.py already builds a model of every listed type and checks that each
     path of the row exists in it; for a family the app should inspect, add a tiny random config to
     tests/tiny_models.py and its name to FAMILY_CASES in tests/unit/test_adapter.py, where the generic checks
     run on it (pattern = output_attentions, z through the output projection = attn_out, the residual stream
     adds up block by block with the row's norms, patching every component reproduces another run).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from attnviz.errors import BadInput
from attnviz.hooks import module_at

# The views whose support depends on the family (every family shows attention weights and rollout).
VIEWS = {
    "query_key": "Query · key",
    "long": "Long inputs",
    "ablation": "Ablation",
    "contributions": "Contributions",
    "logit_lens": "Logit lens",
    "generation": "Generation",
    "patching": "Activation patching",
}


@dataclass(frozen=True)
class Stack:
    """One stack of blocks (the encoder, the decoder, or the only stack) and, per block {i}, its modules."""

    prefix: str  # hook point prefix of block i: "blocks" -> "blocks.{i}.attn.hook_z"; "decoder.blocks" for a decoder
    blocks: str  # the ModuleList of blocks; block i = f"{blocks}.{i}"; its input is the residual stream
    out: str  # attention output projection: its input = the heads side by side (hook_z), its output = hook_attn_out
    attention: str | None = None  # the module that calls transformers' attention function (q, k, v, pattern)
    q: str | None = None  # query projection (None: fused into qkv)
    k: str | None = None  # key projection
    v: str | None = None  # value projection: output (batch, pos, kv_heads * d_head) = x W_V + b_V
    qkv: str | None = None  # one fused q/k/v projection (GPT-2's c_attn)
    mlp: str | None = None  # the module whose output is the MLP's contribution (hook_mlp_out)
    norm_attn: str | None = None  # pre-norm: the norm the attention reads x through; post-norm: LN(x + attn_out)
    norm_mlp: str | None = None  # pre-norm: the norm the MLP reads through; post-norm: LN(x + mlp_out)
    final_norm: str | None = None  # the norm after the last block (None: post-norm stacks end normalised)
    cross_attention: str | None = None  # decoders of encoder-decoders: the cross-attention module
    cross_out: str | None = None  # its output projection


@dataclass(frozen=True)
class Family:
    """One model family: its stacks, its maths, and the views it serves."""

    name: str  # shown in messages, e.g. "Llama"
    model_types: tuple  # transformers config.model_type values of this layout (or a class name)
    kind: str  # "encoder", "decoder" (causal) or "encoder-decoder"
    stacks: tuple  # (Stack, ...): the first is the encoder or the only stack; hook points "blocks.{i}..."
    post_norm: bool  # True: LayerNorm after each residual add (BERT); False: norm before each sublayer (Llama)
    norm: str = "layernorm"  # "layernorm" or "rmsnorm"
    positions: str = "learned"  # "learned", "rope", "relative", "alibi", "sinusoidal" or "none"
    gqa: bool = False  # query heads may share key/value heads (grouped-query attention)
    sliding_window: bool = False  # some or all layers attend within a window only
    parallel: bool = False  # attention and MLP read the same input and add together (no resid_mid)
    gated_mlp: bool = False  # the MLP multiplies a gate projection with an up projection (SwiGLU, GeGLU)
    plain_scores: bool = True  # scores are exactly q·k × scaling (+ mask): no bias, soft-capping or sinks
    plain_softmax: bool = False  # its eager attention is softmax(q·k × scaling + mask) · v, bit for bit
    embed: str | None = None  # token embeddings
    pos_embed: str | None = None  # learned absolute position embeddings
    unembed: str | None = None  # the language-model head, from the model itself (None: the family has none)
    not_supported: tuple = field(default=())  # ((view, why not: one sentence), ...)

    @property
    def stack(self) -> Stack:
        """The encoder, or the only stack."""
        return self.stacks[0]

    def why_not(self, view: str) -> str | None:
        """A sentence saying why this family cannot serve `view`, or None when it can."""
        return dict(self.not_supported).get(view)

    def supports(self, view: str) -> bool:
        return self.why_not(view) is None


def _stack(blocks: str, attn: str | None, *, prefix: str = "blocks", projections: str | None = None,
           q: str | None = "q_proj", k: str | None = "k_proj", v: str | None = "v_proj", qkv: str | None = None,
           out: str = "out_proj", out_at: str | None = None, cross: str | None = None, cross_out: str = "out_proj",
           final_norm: str | None = None, **parts) -> Stack:
    """A Stack from names relative to block {i} of `blocks`: `attn` is the attention module (None: the model
    attends in its own code); q, k, v (or one fused qkv) and out are under `projections` (default: attn), or
    out_at gives the output projection relative to the block; cross is the cross-attention module, cross_out its
    output projection; parts (mlp, norm_attn, norm_mlp) are relative to the block; final_norm is model-wide."""
    block = f"{blocks}.{{i}}."
    under = block + (projections or attn) + "."
    if qkv:
        q = k = v = None

    def at(root: str, name: str | None) -> str | None:
        return None if name is None else root + name

    return Stack(prefix=prefix, blocks=blocks, attention=at(block, attn), q=at(under, q), k=at(under, k),
                 v=at(under, v), qkv=at(under, qkv), out=block + out_at if out_at else under + out,
                 cross_attention=at(block, cross), cross_out=at(block, cross and f"{cross}.{cross_out}"),
                 final_norm=final_norm, **{name: block + rel for name, rel in parts.items()})


_NOT_CAUSAL = "it is not a causal language model"


def _encoder_views(name: str) -> tuple:
    return (("logit_lens", f"The logit lens reads next-token guesses, and a {name} encoder does not predict the "
                           "next token."),
            ("generation", f"A {name} encoder does not generate text: it reads a whole input at once."))


def _score_views(what: str) -> tuple:
    """The two views a family cannot serve when its scores are not q·k × scaling alone (`what` it does)."""
    return (("query_key", f"{what}, so q and k alone do not explain its weights."),
            ("long", f"{what}, which the long-input recording cannot replay."))


# ------------------------------------------------------------------ encoders
BERT = Family(
    name="BERT", model_types=("bert", "roberta", "xlm-roberta", "camembert", "electra", "ernie"), kind="encoder",
    stacks=(_stack("encoder.layer", "attention.self", q="query", k="key", v="value", out_at="attention.output.dense",
                   mlp="output.dense", norm_attn="attention.output.LayerNorm", norm_mlp="output.LayerNorm"),),
    post_norm=True, plain_softmax=True,
    embed="embeddings.word_embeddings", pos_embed="embeddings.position_embeddings", unembed="cls.predictions",
    not_supported=_encoder_views("BERT"),
)
MEGATRON_BERT = replace(
    BERT, name="Megatron-BERT", model_types=("megatron-bert",), post_norm=False, plain_softmax=False,
    stacks=(replace(BERT.stack, norm_attn="encoder.layer.{i}.attention.ln", norm_mlp="encoder.layer.{i}.ln",
                    final_norm="encoder.ln"),),
    not_supported=_encoder_views("Megatron-BERT"),
)
DEBERTA_V2 = replace(
    BERT, name="DeBERTa-v2", model_types=("deberta-v2",), plain_scores=False, plain_softmax=False, positions="relative",
    stacks=(replace(BERT.stack, q="encoder.layer.{i}.attention.self.query_proj",
                    k="encoder.layer.{i}.attention.self.key_proj", v="encoder.layer.{i}.attention.self.value_proj"),),
    pos_embed=None, unembed=None,
    not_supported=_encoder_views("DeBERTa") + (
        *_score_views("DeBERTa adds content-to-position and position-to-content scores to q·k"),
        ("contributions", "The contribution maths does not know DeBERTa's disentangled attention blocks.")),
)
DISTILBERT = Family(
    name="DistilBERT", model_types=("distilbert",), kind="encoder",
    stacks=(_stack("transformer.layer", "attention", q="q_lin", k="k_lin", v="v_lin", out="out_lin", mlp="ffn",
                   norm_attn="sa_layer_norm", norm_mlp="output_layer_norm"),),
    post_norm=True, embed="embeddings.word_embeddings", pos_embed="embeddings.position_embeddings",
    unembed="vocab_projector",
    not_supported=_encoder_views("DistilBERT") + (
        ("contributions", "The contribution maths does not know DistilBERT's blocks."),),
)
MPNET = Family(
    name="MPNet", model_types=("mpnet",), kind="encoder",
    stacks=(_stack("encoder.layer", "attention.attn", q="q", k="k", v="v", out="o", mlp="output.dense",
                   norm_attn="attention.LayerNorm", norm_mlp="output.LayerNorm"),),
    post_norm=True, plain_scores=False,  # learned absolute positions, and a relative bias on the scores
    embed="embeddings.word_embeddings", pos_embed="embeddings.position_embeddings",
    not_supported=_encoder_views("MPNet") + (
        *_score_views("MPNet adds a relative position bias to q·k"),
        ("contributions", "The contribution maths does not know MPNet's blocks.")),
)
MODERNBERT = Family(
    name="ModernBERT", model_types=("modernbert",), kind="encoder",
    stacks=(_stack("layers", "attn", qkv="Wqkv", out="Wo", mlp="mlp", norm_attn="attn_norm", norm_mlp="mlp_norm",
                   final_norm="final_norm"),),
    post_norm=False, positions="rope", sliding_window=True, gated_mlp=True, embed="embeddings.tok_embeddings",
    not_supported=_encoder_views("ModernBERT") + (
        ("contributions", "ModernBERT computes q, k and v in one fused projection, which the contribution maths "
                          "does not split."),),
)

# ------------------------------------------------------------------ causal decoders
_LLAMA_STACK = _stack("layers", "self_attn", out="o_proj", mlp="mlp", norm_attn="input_layernorm",
                      norm_mlp="post_attention_layernorm", final_norm="norm")
LLAMA = Family(
    name="Llama", model_types=("llama", "qwen2", "qwen3", "olmo"), kind="decoder", stacks=(_LLAMA_STACK,),
    post_norm=False, norm="rmsnorm", positions="rope", gqa=True, gated_mlp=True, plain_softmax=True,
    embed="embed_tokens", unembed="lm_head",
)
MISTRAL = replace(LLAMA, name="Mistral", model_types=("mistral",), sliding_window=True)
GEMMA = replace(
    LLAMA, name="Gemma", model_types=("gemma",), plain_softmax=False,
    not_supported=(("contributions", "Gemma scales its embeddings and norms in its own way, which the contribution "
                                     "maths does not model."),),
)
GEMMA2 = replace(
    LLAMA, name="Gemma 2", model_types=("gemma2",), plain_scores=False, plain_softmax=False, sliding_window=True,
    stacks=(replace(_LLAMA_STACK, norm_mlp="layers.{i}.pre_feedforward_layernorm"),),
    not_supported=(
        *_score_views("Gemma 2 soft-caps its scores (tanh)"),
        ("contributions", "Gemma 2 normalises each sublayer's output again before adding it, which the "
                          "contribution maths does not model.")),
)
PHI3 = replace(
    LLAMA, name="Phi-3", model_types=("phi3",), plain_softmax=False,
    stacks=(replace(_LLAMA_STACK, q=None, k=None, v=None, qkv="layers.{i}.self_attn.qkv_proj"),),
    not_supported=(("contributions", "Phi-3 computes q, k and v in one fused projection, which the contribution "
                                     "maths does not split."),),
)
PHI = Family(
    name="Phi", model_types=("phi",), kind="decoder",
    stacks=(_stack("layers", "self_attn", out="dense", mlp="mlp", norm_attn="input_layernorm",
                   final_norm="final_layernorm"),),
    post_norm=False, positions="rope", parallel=True, embed="embed_tokens", unembed="lm_head",
    not_supported=(("contributions", "Phi runs attention and the MLP side by side on one norm, which the "
                                     "contribution maths does not model."),),
)
GPT2 = Family(
    name="GPT-2", model_types=("gpt2",), kind="decoder",
    stacks=(_stack("h", "attn", qkv="c_attn", out="c_proj", mlp="mlp", norm_attn="ln_1", norm_mlp="ln_2",
                   final_norm="ln_f"),),
    post_norm=False, plain_softmax=True, embed="wte", pos_embed="wpe", unembed="lm_head",
    not_supported=(("contributions", "GPT-2 computes q, k and v in one fused projection, which the contribution "
                                     "maths does not split."),),
)
GPTJ = Family(
    name="GPT-J", model_types=("gptj",), kind="decoder",
    stacks=(_stack("h", "attn", mlp="mlp", norm_attn="ln_1", final_norm="ln_f"),),
    post_norm=False, positions="rope", parallel=True, embed="wte", unembed="lm_head",
    not_supported=(("contributions", "GPT-J runs attention and the MLP side by side on one norm, which the "
                                     "contribution maths does not model."),),
)
GPT_NEO = Family(
    name="GPT-Neo", model_types=("gpt_neo",), kind="decoder",
    stacks=(_stack("h", "attn.attention", mlp="mlp", norm_attn="ln_1", norm_mlp="ln_2", final_norm="ln_f"),),
    post_norm=False, sliding_window=True, embed="wte", pos_embed="wpe", unembed="lm_head",
    not_supported=(("contributions", "The contribution maths does not know GPT-Neo's blocks."),),
)
GPT_NEOX = Family(
    name="GPT-NeoX", model_types=("gpt_neox",), kind="decoder",
    stacks=(_stack("layers", "attention", qkv="query_key_value", out="dense", mlp="mlp", norm_attn="input_layernorm",
                   norm_mlp="post_attention_layernorm", final_norm="final_layer_norm"),),
    post_norm=False, positions="rope", parallel=True, embed="embed_in", unembed="embed_out",
    not_supported=(("contributions", "GPT-NeoX runs attention and the MLP side by side, which the contribution "
                                     "maths does not model."),),
)
FALCON = Family(
    name="Falcon", model_types=("falcon",), kind="decoder",
    stacks=(_stack("h", "self_attention", qkv="query_key_value", out="dense", mlp="mlp", norm_attn="input_layernorm",
                   final_norm="ln_f"),),
    post_norm=False, positions="rope", parallel=True, gqa=True, embed="word_embeddings", unembed="lm_head",
    not_supported=(("contributions", "Falcon runs attention and the MLP side by side, which the contribution "
                                     "maths does not model."),),
)
BLOOM = Family(
    name="BLOOM", model_types=("bloom",), kind="decoder",
    stacks=(_stack("h", "self_attention", qkv="query_key_value", out="dense", mlp="mlp", norm_attn="input_layernorm",
                   norm_mlp="post_attention_layernorm", final_norm="ln_f"),),
    post_norm=False, positions="alibi", plain_scores=False, embed="word_embeddings", unembed="lm_head",
    not_supported=(
        *_score_views("BLOOM adds an ALiBi distance penalty to q·k"),
        ("contributions", "BLOOM computes q, k and v in one fused projection, which the contribution maths "
                          "does not split.")),
)
OPT = Family(
    name="OPT", model_types=("opt",), kind="decoder",
    stacks=(_stack("decoder.layers", "self_attn", mlp="fc2", norm_attn="self_attn_layer_norm",
                   norm_mlp="final_layer_norm", final_norm="decoder.final_layer_norm"),),
    post_norm=False, embed="decoder.embed_tokens", pos_embed="decoder.embed_positions", unembed="lm_head",
    not_supported=(("contributions", "The contribution maths does not know OPT's blocks."),),
)

# ------------------------------------------------------------------ encoder-decoders
BART = Family(
    name="BART", model_types=("bart",), kind="encoder-decoder",
    stacks=(
        _stack("encoder.layers", "self_attn", mlp="fc2", norm_attn="self_attn_layer_norm", norm_mlp="final_layer_norm"),
        _stack("decoder.layers", "self_attn", prefix="decoder.blocks", mlp="fc2", norm_attn="self_attn_layer_norm",
               norm_mlp="final_layer_norm", cross="encoder_attn"),
    ),
    post_norm=True, embed="shared", pos_embed="encoder.embed_positions", unembed="lm_head",
    not_supported=(("logit_lens", "The logit lens reads a causal language model's layers; BART is an "
                                  "encoder-decoder."),
                   ("long", "Long inputs are recorded on encoders and causal decoders; BART is an encoder-decoder.")),
)
MARIAN = replace(BART, name="Marian", model_types=("marian",), positions="sinusoidal")  # a fixed table
MBART = replace(
    BART, name="mBART", model_types=("mbart",), post_norm=False,
    stacks=(replace(BART.stacks[0], final_norm="encoder.layer_norm"),
            replace(BART.stacks[1], final_norm="decoder.layer_norm")),
    not_supported=BART.not_supported + (("contributions", "The contribution maths covers post-norm encoder "
                                                          "blocks such as BART's; mBART normalises first."),),
)
_T5 = dict(q="q", k="k", v="v", out="o", norm_attn="layer.0.layer_norm")
T5 = Family(
    name="T5", model_types=("t5", "mt5", "umt5"), kind="encoder-decoder",
    stacks=(_stack("encoder.block", "layer.0.SelfAttention", **_T5, mlp="layer.1.DenseReluDense",
                   norm_mlp="layer.1.layer_norm", final_norm="encoder.final_layer_norm"),
            _stack("decoder.block", "layer.0.SelfAttention", prefix="decoder.blocks", **_T5,
                   mlp="layer.2.DenseReluDense", norm_mlp="layer.2.layer_norm", final_norm="decoder.final_layer_norm",
                   cross="layer.1.EncDecAttention", cross_out="o")),
    post_norm=False, norm="rmsnorm", positions="relative", plain_scores=False, embed="shared", unembed="lm_head",
    not_supported=(
        *_score_views("T5 adds a learned relative position bias to q·k"),
        ("logit_lens", "The logit lens reads a causal language model's layers; T5 is an encoder-decoder.")),
)

# ------------------------------------------------------------------ vision encoders (images cut into patches)
VIT = Family(
    name="ViT", model_types=("vit", "deit"), kind="encoder",
    stacks=(_stack("layers", "attention", out="o_proj", mlp="mlp", norm_attn="layernorm_before",
                   norm_mlp="layernorm_after", final_norm="layernorm"),),
    post_norm=False, plain_softmax=True, embed="embeddings.patch_embeddings.projection",
    not_supported=(
        ("logit_lens", "A vision transformer reads image patches and predicts no tokens."),
        ("generation", "A vision transformer reads image patches and generates no text."),
        ("long", "A vision transformer reads a fixed number of image patches, not long texts."),
        ("contributions", "The contribution views read text inputs; a vision transformer reads image patches.")),
)

# ------------------------------------------------------------------ attnviz's own models (models/scratch.py)
_TOY = dict(projections="attn", mlp="mlp", norm_attn="ln1", norm_mlp="ln2", final_norm="ln_f")
SCRATCH = Family(
    name="attnviz toy transformer", model_types=("ScratchTransformer",), kind="decoder",
    stacks=(_stack("layers", None, **_TOY),
            replace(_stack("dec_layers", None, prefix="decoder.blocks", **_TOY),
                    cross_out="dec_layers.{i}.cross.out_proj")),
    post_norm=False, embed="embed", pos_embed="pos.0", unembed="head",
    not_supported=(
        ("query_key", "The toy models compute attention in attnviz's own function and return their weights "
                      "directly; their q and k are not recorded."),
        ("long", "The toy models are short by design (their positions stop at max_len)."),
        ("logit_lens", "The toy models are not language models of text."),
        ("generation", "The toy models are not language models of text.")),
)

FAMILIES: tuple = (BERT, MEGATRON_BERT, DEBERTA_V2, DISTILBERT, MPNET, MODERNBERT, LLAMA, MISTRAL, GEMMA, GEMMA2,
                   PHI3, PHI, GPT2, GPTJ, GPT_NEO, GPT_NEOX, FALCON, BLOOM, OPT, BART, MARIAN, MBART, T5, VIT, SCRATCH)
BY_TYPE: dict = {t: fam for fam in FAMILIES for t in fam.model_types}


def model_type(model) -> str:
    """config.model_type of a transformers model, or the class name of a model without a config."""
    config = getattr(model, "config", None)
    return getattr(config, "model_type", None) or type(model).__name__


def family_for_type(model_type: str) -> Family | None:
    """The row of a transformers model_type, or None when no row lists it."""
    return BY_TYPE.get(model_type)


def _fits(fam: Family, model) -> bool:
    """True when the row's first stack and its output projections resolve on `model`."""
    s = fam.stack
    blocks = module_at(model, s.blocks)
    return blocks is not None and len(blocks) > 0 and module_at(model, s.out.format(i=0)) is not None


def family_of(model) -> Family:
    """The row of `model`: by its model_type, else the first row whose layout the model has.
    Raises BadInput with a plain sentence when no row fits."""
    fam = family_for_type(model_type(model))
    if fam is not None:
        return fam
    for fam in FAMILIES:
        if _fits(fam, model):
            return fam
    mt = model_type(model)
    raise BadInput(f"attnviz does not know where a {mt} model keeps its attention blocks, so it can show their "
                   "weights but not look inside them.")


def why_not(model, view: str) -> str | None:
    """Why `model` cannot serve `view` (a sentence), or None when it can."""
    try:
        fam = family_of(model)
    except BadInput as e:
        return str(e)
    return fam.why_not(view)


def path(fam: Family, part: str, layer: int, stack: int = 0) -> str:
    """The dotted path of `part` ("out", "v", "mlp", "norm_attn", ...) of block `layer` in stack `stack`."""
    template = getattr(fam.stacks[stack], part)
    if template is None:
        raise BadInput(f"A {fam.name} block has no separate {part.replace('_', ' ')} module.")
    return template.format(i=layer)


def module(model, part: str, layer: int = 0, stack: int = 0, fam: Family | None = None):
    """The module of `part` of block `layer` ("out" -> that block's attention output projection); for model-wide
    parts ("embed", "pos_embed", "unembed", "final_norm") the layer is ignored. Raises BadInput when missing."""
    fam = fam or family_of(model)
    if part in ("embed", "pos_embed", "unembed"):
        where = getattr(fam, part)
    elif part == "final_norm":
        where = fam.stacks[stack].final_norm
    else:
        where = path(fam, part, layer, stack)
    found = module_at(model, where) if where else None
    if found is None:
        raise BadInput(f"This {fam.name} model has no module at {where or part}, so that part cannot be read.")
    return found


def n_blocks(model, stack: int = 0, fam: Family | None = None) -> int:
    """How many blocks stack `stack` of `model` has (0 when the model has no such stack)."""
    fam = fam or family_of(model)
    if stack >= len(fam.stacks):
        return 0
    blocks = module_at(model, fam.stacks[stack].blocks)
    return 0 if blocks is None else len(blocks)


def table_module(model, part: str):
    """(dotted name in the model, module) of a model-wide part ("embed", "pos_embed", "unembed") or None when the
    model has none. A model whose layout no row describes: its position table is the embedding with one row per
    position of its context (found by size, not by name)."""
    import torch

    try:
        fam = family_of(model)
    except BadInput:
        fam = None
    where = getattr(fam, part, None) if fam is not None else None
    found = module_at(model, where) if where else None
    if found is None and fam is None and part == "pos_embed":
        config = getattr(model, "config", None)
        n = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        vocab = getattr(config, "vocab_size", None)
        found = next((m for m in model.modules() if isinstance(m, torch.nn.Embedding) and n
                      and m.num_embeddings in (n, n + 2) and m.num_embeddings != vocab), None)
    if found is None:
        return None
    return next((name for name, m in model.named_modules() if m is found), where), found


def in_width(module) -> int:
    """Input width of a linear layer (GPT-2's Conv1D stores its weight as (in, out))."""
    if hasattr(module, "in_features"):
        return int(module.in_features)
    weight = getattr(module, "weight", None)
    if weight is not None and weight.ndim == 2:
        return int(weight.shape[0])
    raise BadInput("The attention output projection has no known input width.")


def output_projection(model, layer: int):
    """The module whose input is block `layer`'s heads side by side (batch, pos, n_heads * d_head)."""
    try:
        return module(model, "out", layer)
    except BadInput:
        raise BadInput(f"Ablation does not know where the attention output projection of a {model_type(model)} "
                       "model lives, so its heads cannot be switched off.") from None
