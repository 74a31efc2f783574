"""One way to see inside a model while it runs: named hook points, one per activation, each with
its shape (TransformerLens names its hooks the same way), and the two mechanisms behind them.

  hook point       shape                              how
  attn.pattern     (batch, head, query, key)          an attention function registered with transformers
  attn.q, attn.k   (batch, head, query|key, d_head)   the same (after RoPE; grouped kv heads as cached)
  attn.head_out    (batch, seq, n_heads * d_head)     a forward pre-hook on the attention output projection

capture.py (attn.pattern, written into one array), query_key/qk.py (attn.q, attn.k) and
metrics/ablation.py (attn.head_out, zeroed) all go through this module: attention_function()
swaps a model's attention implementation for a registered one, pre_hooks() adds forward
pre-hooks; both restore the model when the block ends (hold the model's lock around them)."""
from __future__ import annotations

from contextlib import contextmanager

from attnviz.errors import BadInput

HOOK_POINTS = {
    "attn.pattern": "(batch, head, query, key)",
    "attn.q": "(batch, head, query, d_head)",
    "attn.k": "(batch, kv_head, key, d_head)",
    "attn.head_out": "(batch, seq, n_heads * d_head)",
}


def register_attention(name: str, fn) -> None:
    """Register `fn` as transformers attention implementation `name`, with eager's mask function
    under the same name: without one, transformers 5 builds no attention mask at all for a new
    name (a causal model would then see later tokens, padding would count)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    AttentionInterface.register(name, fn)
    ALL_MASK_ATTENTION_FUNCTIONS.register(name, _mask)


def _mask(*, mask_function, attention_mask=None, **kwargs):
    """eager's mask, with a quick exit for the common case: a bidirectional model and no padding
    needs no mask at all (eager_mask would reach the same None after ~65 us of checks, 1-2% of a
    16-token forward)."""
    from transformers.masking_utils import bidirectional_mask_function, eager_mask

    if mask_function is bidirectional_mask_function and (attention_mask is None or bool(attention_mask.all())):
        return None
    return eager_mask(mask_function=mask_function, attention_mask=attention_mask, **kwargs)


@contextmanager
def attention_function(configs, name: str):
    """Within the block, every config in `configs` (a model's config, and an encoder's when it has
    its own) runs attention through the function registered as `name`; restored afterwards."""
    configs = list({id(c): c for c in configs}.values())
    before = [(c, c._attn_implementation) for c in configs]
    try:
        for c, _ in before:
            c._attn_implementation = name
        yield
    finally:
        for c, impl in before:
            c._attn_implementation = impl


@contextmanager
def pre_hooks(pairs):
    """Within the block, each (module, hook) in `pairs` runs as a forward pre-hook; removed after."""
    handles = []
    try:
        for module, hook in pairs:
            handles.append(module.register_forward_pre_hook(hook))
        yield
    finally:
        for h in handles:
            h.remove()


# Where the attention output projection of layer {i} lives, relative to model.base_model,
# per transformers model_type. Unlisted types: every template is tried in turn.
OUTPUT_PROJECTION: dict[str, str] = {
    "bert": "encoder.layer.{i}.attention.output.dense",
    "roberta": "encoder.layer.{i}.attention.output.dense",
    "xlm-roberta": "encoder.layer.{i}.attention.output.dense",
    "camembert": "encoder.layer.{i}.attention.output.dense",
    "electra": "encoder.layer.{i}.attention.output.dense",
    "ernie": "encoder.layer.{i}.attention.output.dense",
    "megatron-bert": "encoder.layer.{i}.attention.output.dense",
    "deberta-v2": "encoder.layer.{i}.attention.output.dense",
    "distilbert": "transformer.layer.{i}.attention.out_lin",
    "mpnet": "encoder.layer.{i}.attention.attn.o",
    "modernbert": "layers.{i}.attn.Wo",
    "llama": "layers.{i}.self_attn.o_proj",
    "mistral": "layers.{i}.self_attn.o_proj",
    "qwen2": "layers.{i}.self_attn.o_proj",
    "qwen3": "layers.{i}.self_attn.o_proj",
    "gemma": "layers.{i}.self_attn.o_proj",
    "gemma2": "layers.{i}.self_attn.o_proj",
    "phi3": "layers.{i}.self_attn.o_proj",
    "olmo": "layers.{i}.self_attn.o_proj",
    "phi": "layers.{i}.self_attn.dense",
    "gpt2": "h.{i}.attn.c_proj",
    "gptj": "h.{i}.attn.out_proj",
    "gpt_neo": "h.{i}.attn.attention.out_proj",
    "gpt_neox": "layers.{i}.attention.dense",
    "falcon": "h.{i}.self_attention.dense",
    "bloom": "h.{i}.self_attention.dense",
    "opt": "decoder.layers.{i}.self_attn.out_proj",
    "t5": "encoder.block.{i}.layer.0.SelfAttention.o",
    "mt5": "encoder.block.{i}.layer.0.SelfAttention.o",
    "bart": "encoder.layers.{i}.self_attn.out_proj",
    "mbart": "encoder.layers.{i}.self_attn.out_proj",
    "marian": "encoder.layers.{i}.self_attn.out_proj",
}


def _resolve(root, path: str):
    obj = root
    for part in path.split("."):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    return obj


def module_at(model, path: str):
    """The submodule at a dotted `path` ("encoder.layer.3.attention.self.value"), looked up from the
    model's base model first, then from the model itself; None when neither has it."""
    for root in (getattr(model, "base_model", model), model):
        try:
            return _resolve(root, path)
        except (AttributeError, IndexError, TypeError):
            continue
    return None


def output_projection(model, layer: int):
    """The module whose input is layer `layer`'s concatenated head outputs (batch, seq, n_heads*d_head)."""
    model_type = getattr(model.config, "model_type", "")
    templates = [OUTPUT_PROJECTION[model_type]] if model_type in OUTPUT_PROJECTION else []
    templates += [t for t in dict.fromkeys(OUTPUT_PROJECTION.values()) if t not in templates]
    for template in templates:
        module = module_at(model, template.format(i=layer))
        if module is not None:
            return module
    raise BadInput(f"Ablation does not know where the attention output projection of a {model_type or 'this'} "
                   "model lives, so its heads cannot be switched off.")


def in_width(module) -> int:
    if hasattr(module, "in_features"):
        return int(module.in_features)
    weight = getattr(module, "weight", None)
    if weight is not None and weight.ndim == 2:  # GPT-2 Conv1D stores (in, out)
        return int(weight.shape[0])
    raise BadInput("The attention output projection has no known input width.")
