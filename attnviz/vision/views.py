"""What the Vision page shows, as numbers over patches: one head's row, rollout and flow from [CLS] to the
patches (attnviz's own rollout and flow, unchanged), attention distance per head."""
from __future__ import annotations

import numpy as np

from attnviz.errors import BadInput
from attnviz.metrics.flow import attention_flow, flow_shares
from attnviz.metrics.rollout import fuse_heads, mixing_matrices, rollout


def head_row(attention: np.ndarray, layer: int, head: int | None, query: int, n_prefix: int = 1) -> np.ndarray:
    """(n_patches,) the weights token `query` gives each patch in one head (None = mean of the heads).
    attention: (layer, head, T, T), the first n_prefix tokens not patches."""
    a = np.asarray(attention)
    if not 0 <= layer < a.shape[0] or (head is not None and not 0 <= head < a.shape[1]):
        raise BadInput(f"This model has {a.shape[0]} layers of {a.shape[1]} heads; layer {layer}, head {head} "
                       "is not one of them.")
    if not 0 <= query < a.shape[2]:
        raise BadInput(f"Token {query} is not one of the {a.shape[2]:,} tokens.")
    rows = a[layer, :, query, n_prefix:] if head is None else a[layer, head, query, n_prefix:][None]
    return rows.mean(axis=0).astype(np.float32)


def cls_grid(attention: np.ndarray, n_prefix: int = 1, query: int = 0) -> np.ndarray:
    """(layer, head, n_patches): every head's row of token `query` ([CLS] by default) over the patches."""
    return np.asarray(attention)[:, :, query, n_prefix:].astype(np.float32)


def patch_rollout(attention: np.ndarray, *, head_fusion: str = "mean", residual: float = 0.5,
                  discard_ratio: float = 0.0, n_prefix: int = 1, query: int = 0) -> np.ndarray:
    """(n_patches,) the share of each patch in token `query` after the last layer, by attention rollout
    (vit-explain's head fusion and discard ratio; the [CLS] column is never discarded)."""
    rolled = rollout(attention, head_fusion=head_fusion, residual=residual, discard_ratio=discard_ratio,
                     keep_cols=tuple(range(n_prefix)))
    return rolled[-1, query, n_prefix:].astype(np.float32)


def patch_flow(attention: np.ndarray, *, head_fusion: str = "mean", residual: float = 0.5,
               discard_ratio: float = 0.0, n_prefix: int = 1, query: int = 0) -> np.ndarray:
    """(n_patches,) attention flow from token `query` after the last layer to each input patch, as shares of
    the total flow (inputs of at most 24 tokens)."""
    mixes = mixing_matrices(fuse_heads(attention, head_fusion), residual=residual, discard_ratio=discard_ratio,
                            keep_cols=tuple(range(n_prefix)))
    return flow_shares(attention_flow(mixes, [query]))[0, n_prefix:].astype(np.float32)
