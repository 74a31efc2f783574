"""Attention weights written straight into one preallocated array while a BERT or Llama model runs.

`extract` needs every layer's weights as one (layer, head, query, key) array. Stacking the
per-layer tensors afterwards copies them all (75 MB at 512 tokens for the default model). For
the BERT and Llama families (the packaged MiniLM and SmolLM2), a registered attention function with
exactly transformers' eager maths writes each layer's softmax into its slice of a preallocated array
instead, so no copy is made (283 MB for SmolLM2 at 512 tokens)."""
from __future__ import annotations

import threading
from contextlib import contextmanager


# model types whose eager attention is exactly the function below (tests compare with eager)
CAPTURE_TYPES = frozenset({"bert", "llama"})
NAME = "attnviz_eager_capture"
_TARGET = threading.local()  # the buffer of the forward running in this thread
_REGISTERED = False


def _eager_into_buffer(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' BERT and Llama eager attention, with softmax written into the capture buffer.
    (Llama repeats grouped key/value heads and takes the softmax in float32, a no-op for the float32
    models capture is used for.)"""
    import torch

    if scaling is None:
        scaling = query.size(-1) ** -0.5
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:  # grouped-query attention: each key/value head serves `groups` query heads
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, T_q, T_k)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, float("-inf"))
        else:
            scores = scores + attention_mask
    weights = _TARGET.buffer[module.layer_idx]
    torch.softmax(scores, dim=-1, out=weights)
    weights = torch.nn.functional.dropout(weights, p=dropout, training=module.training)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights


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


def supported(model) -> bool:
    cfg = model.config
    import torch

    return (cfg.model_type in CAPTURE_TYPES and not model.training and model.dtype == torch.float32
            and not (cfg.model_type == "bert" and getattr(cfg, "is_decoder", False)))


@contextmanager
def capture(model, n_layers: int, n_heads: int, seq_len: int):
    """Within the block, forwards of `model` (batch 1, the caller holds the model's lock) write
    their attention weights into the yielded float32 array (layer, head, query, key)."""
    global _REGISTERED
    import torch

    if not _REGISTERED:
        register_attention(NAME, _eager_into_buffer)
        _REGISTERED = True
    # torch's allocator, not np.empty: its large blocks are first written 3-8x faster here
    # (0.08 s against 0.2-0.7 s to fill SmolLM2's 283 MB at 512 tokens); the numpy view keeps it alive
    buffer = torch.empty((n_layers, 1, n_heads, seq_len, seq_len), dtype=torch.float32)
    config = model.config
    before = config._attn_implementation
    _TARGET.buffer = buffer
    config._attn_implementation = NAME  # restored below; the caller holds the model's lock
    try:
        yield buffer.numpy()[:, 0]
    finally:
        config._attn_implementation = before
        _TARGET.buffer = None
