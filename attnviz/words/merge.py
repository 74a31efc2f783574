"""Word-level attention: word pieces merged into words with Clark et al.'s (2019) rule.

Attention *to* a word is the sum of the attention to its pieces (so nothing is lost); attention *from*
a word is the mean of its pieces' rows (so each row still sums to 1). Works for any tokenizer the
extraction marks continuation pieces for (WordPiece "##", byte-level BPE "Ġ", SentencePiece "▁"):
a word is a piece that does not continue the one before it, with the pieces that continue it.
Special tokens ([CLS], [SEP], <s>, padding) are words of their own."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnviz.types import AttentionResult


def word_starts(continuation: np.ndarray, special_mask: np.ndarray | None = None) -> np.ndarray:
    """Index of each word's first piece (int array, ascending, starts at 0)."""
    cont = np.asarray(continuation, dtype=bool).copy()
    if special_mask is not None:
        cont &= ~np.asarray(special_mask, dtype=bool)
    if len(cont):
        cont[0] = False
    return np.flatnonzero(~cont)


def merge_map(att: np.ndarray, q_starts: np.ndarray | None, k_starts: np.ndarray | None) -> np.ndarray:
    """(..., query, key) maps with keys summed over each word's pieces and query rows averaged over
    each word's pieces. None leaves that axis as it is (cross-attention merges only its keys)."""
    out = np.asarray(att, dtype=np.float32)
    if k_starts is not None:
        out = np.add.reduceat(out, k_starts, axis=-1)
    if q_starts is not None:
        counts = np.diff(np.append(q_starts, out.shape[-2])).astype(np.float32)
        out = np.add.reduceat(out, q_starts, axis=-2) / counts[:, None]
    return np.ascontiguousarray(out, dtype=np.float32)


def word_labels(tokens, starts: np.ndarray) -> tuple[str, ...]:
    """Each word's label: its pieces' labels joined, continuation markers ("##") dropped."""
    ends = np.append(starts[1:], len(tokens))
    return tuple(tokens[s] + "".join(t[2:] if t.startswith("##") else t for t in tokens[s + 1:e])
                 for s, e in zip(starts, ends))


def merge_words(result: AttentionResult) -> AttentionResult:
    """`result` at word level: its (encoder) self-attention merged on both axes, cross-attention merged on
    its keys; the decoder's own attention is left as it is. A result whose pieces are all words
    already comes back unchanged. The merged result's `word_starts` says where each word began."""
    starts = word_starts(result.continuation, result.special_mask)
    if len(starts) == result.seq_len or result.word_starts is not None:
        return result
    cross = result.cross_attention
    return replace(
        result,
        attention=merge_map(result.attention, starts, starts),
        tokens=word_labels(result.tokens, starts),
        token_ids=tuple(result.token_ids[s] for s in starts),
        special_mask=np.asarray(result.special_mask)[starts].copy(),
        continuation=np.zeros(len(starts), dtype=bool),
        segment_ids=np.asarray(result.segment_ids)[starts].copy(),
        cross_attention=None if cross is None else merge_map(cross, None, starts),
        word_starts=tuple(int(s) for s in starts),
    )
