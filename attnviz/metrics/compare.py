"""Compare the attention of two inputs (same length) or two models (same tokenizer)."""
from __future__ import annotations

import numpy as np

from attnviz.attention import total_variation
from attnviz.errors import BadInput
from attnviz.units import count_text


def check_same_length(a, b) -> None:
    """Raise BadInput unless two AttentionResults have the same number of tokens."""
    if a.seq_len != b.seq_len:
        raise BadInput(
            f"The two texts have different lengths ({a.seq_len} and {count_text(b.seq_len)} tokens, special tokens "
            "included), so their attention matrices cannot be laid on top of each other. Edit one so both "
            "have the same number of tokens (e.g. swap one word for another)."
        )


def check_same_tokens(a, b) -> None:
    """Raise BadInput unless two results (two models) split the text into the same tokens."""
    if tuple(a.tokens) != tuple(b.tokens):
        counts = (f"{count_text(a.seq_len)} and {count_text(b.seq_len)} tokens" if a.seq_len != b.seq_len
                  else f"{count_text(a.seq_len)} tokens each, not the same ones")
        raise BadInput(f"The two models split the text into different tokens ({counts}: their tokenizers differ), "
                       "so position i does not mean the same thing in both. Pick two models with the same tokenizer.")


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b for two same-shape attention arrays (..., query, key)."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    if a.shape != b.shape:
        raise BadInput(f"The attention shapes differ: {a.shape} and {b.shape}.")
    return a - b


def row_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Mean total-variation distance between matching rows: (..., query, key) -> (...,).
    0 = same attention, 1 = the rows attend to disjoint keys."""
    return total_variation(a, b).mean(axis=-1)


def head_distance(a, b) -> np.ndarray:
    """(layer, head) row distance between two results with the same layers, heads and length."""
    check_same_length(a, b)
    if a.attention.shape[:2] != b.attention.shape[:2]:
        raise BadInput(f"The models have different numbers of layers x heads ({a.n_layers} x {a.n_heads} and "
                       f"{b.n_layers} x {b.n_heads}); compare one chosen head of each instead.")
    return row_distance(a.attention, b.attention)
