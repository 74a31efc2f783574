"""Mask demos: a padded batch, fully masked rows, and what leaks without a causal mask."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.attention import causal_mask
from attnviz.attention import batch_masks, scaled_dot_product, softmax
from attnviz.errors import BadInput
from attnviz.units import count_text

MAX_BATCH = 6  # sequences in the demo batch
MAX_LEN = 12  # longest padded length the demo shows


@dataclass(frozen=True)
class MaskedBatch:
    scores: np.ndarray  # (batch, T, T) scaled scores before masking
    mask: np.ndarray  # (batch, T, T) bool, True = may attend
    masked_scores: np.ndarray  # (batch, T, T) scores with -inf where the mask forbids
    weights: np.ndarray  # (batch, T, T) row softmax; rows with nothing visible are zeros
    lengths: tuple[int, ...]  # real tokens per sequence
    fully_masked_rows: tuple[tuple[int, int], ...]  # (sequence, query) with no visible key


def masked_batch(lengths, max_len: int | None = None, causal: bool = True, padding: bool = True,
                 d_k: int = 8, seed: int = 0) -> MaskedBatch:
    """Random seeded self-attention scores for a padded batch, masked and normalised.

    lengths: real tokens per sequence; max_len: padded length (default: the longest).
    """
    lengths = tuple(int(n) for n in lengths)
    if not 1 <= len(lengths) <= MAX_BATCH:
        raise BadInput(f"The demo batch holds 1 to {MAX_BATCH} sequences.")
    max_len = max(lengths) if max_len is None else int(max_len)
    if max_len > MAX_LEN:
        raise BadInput(f"The demo pads to at most {count_text(MAX_LEN)} tokens so the matrices stay readable.")
    mask = batch_masks(lengths, max_len, causal=causal, padding=padding)  # raises on bad lengths
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((len(lengths), max_len, d_k))
    scores = x @ np.swapaxes(x, 1, 2) / np.sqrt(d_k)  # (B, T, T)
    masked = np.where(mask, scores, -np.inf)
    weights = softmax(masked, axis=-1)
    empty = tuple((int(b), int(i)) for b, i in zip(*np.nonzero(~mask.any(axis=-1))))
    return MaskedBatch(scores=scores, mask=mask, masked_scores=masked, weights=weights,
                       lengths=lengths, fully_masked_rows=empty)


def fully_masked_row_behaviours(n: int = 4) -> dict[str, np.ndarray]:
    """What three softmax implementations return for a row whose n keys are all masked."""
    row = np.full(n, -np.inf)
    with np.errstate(invalid="ignore"):
        naive = np.exp(row) / np.exp(row).sum()  # 0 / 0 -> nan
    big_negative = softmax(np.full(n, -1e9))  # masked_fill(-1e9): a uniform row over padding
    return {"naive exp / sum": naive, "fill with -1e9": big_negative, "attnviz softmax": softmax(row)}


@dataclass(frozen=True)
class Leak:
    change_with_mask: np.ndarray  # (T,) |output change| per position when the last token changes
    change_without_mask: np.ndarray  # (T,) the same without a causal mask
    weight_on_future: np.ndarray  # (T,) total weight each query puts on later keys, no mask


def future_leak(seq_len: int = 6, d: int = 4, seed: int = 0) -> Leak:
    """Change only the LAST token and measure how much each position's output moves.

    With a causal mask only the last position changes; without it every position does,
    i.e. the model could read the token it is supposed to predict.
    """
    if not 2 <= seq_len <= MAX_LEN:
        raise BadInput(f"Use 2 to {count_text(MAX_LEN)} tokens.")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq_len, d))
    x2 = x.copy()
    x2[-1] = rng.standard_normal(d) * 2
    causal = causal_mask(seq_len)
    changes = []
    for mask in (causal, None):
        out1, w1 = scaled_dot_product(x, x, x, mask=mask)
        out2, _ = scaled_dot_product(x2, x2, x2, mask=mask)
        changes.append(np.linalg.norm(out2 - out1, axis=-1))
        if mask is None:
            future = np.where(~causal, w1, 0.0).sum(axis=-1)
    return Leak(change_with_mask=changes[0], change_without_mask=changes[1], weight_on_future=future)
