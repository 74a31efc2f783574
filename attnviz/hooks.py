"""The mechanisms behind the model adapter's hook points: registering an attention function with transformers,
switching a model's attention implementation for one block of code, and finding a submodule by its path.

The hook points themselves, their names and shapes, are in `attnviz.models.adapter` (the recording context every
feature uses); where each family keeps its modules is in `attnviz.models.families`."""
from __future__ import annotations

from contextlib import contextmanager


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
