"""Attention weights written straight into one preallocated array while a BERT or Llama model runs.

`extract` needs every layer's weights as one (layer, head, query, key) array. Stacking the
per-layer tensors afterwards copies them all (75 MB at 512 tokens for the default model). For
the BERT and Llama families (the packaged MiniLM and SmolLM2), a registered attention function with
exactly transformers' eager maths writes each layer's softmax into its slice of a preallocated array
instead, so no copy is made (283 MB for SmolLM2 at 512 tokens)."""
from __future__ import annotations

import threading
from contextlib import contextmanager

from attnviz.hooks import attention_function, register_attention


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
    _TARGET.buffer = buffer
    try:
        with attention_function([model.config], NAME):  # the caller holds the model's lock
            yield buffer.numpy()[:, 0]  # hook point attn.pattern for every layer
    finally:
        _TARGET.buffer = None
