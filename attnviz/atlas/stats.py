"""What a corpus run keeps of one sentence: per head its statistics, its strongest query -> key pairs, the
Jensen-Shannon divergences between every pair of heads (summed over the rows, for "related heads"), and
with a parse the per-relation syntax hits. Computed at word level (Clark et al.'s rule, attnviz.words)
unless asked for word pieces; never streamlit."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.metrics.entropy import RowEntropy, head_mean, result_masks
from attnviz.metrics.roles import ROLE_KEYS, RoleReader, broadness

# per (sentence, layer, head): these numbers, in this order
STATS = ("entropy", "entropy_norm", "distance") + ROLE_KEYS
STAT_LABELS = {"entropy": "entropy (nats)", "entropy_norm": "entropy / ln(keys seen)",
               "distance": "mean attention distance (positions)",
               **{k: f"role: {k}" for k in ROLE_KEYS}, "first": "sink mass (weight on the first token)"}
EDGE_MIN = 0.05  # query -> key pairs kept for search and patterns: weight at least this ...
EDGE_TOP = 4  # ... and among the query row's 4 largest


@dataclass(frozen=True)
class SentenceRecord:
    sid: int
    text: str
    n_pieces: int  # model positions (special tokens included)
    truncated: bool
    tokens: tuple[str, ...]  # the positions the statistics are about (words, or pieces)
    special: np.ndarray  # bool (n,)
    parse_word: np.ndarray  # int (n,): the parse's word containing each position's first piece, -1 if none
    stats: np.ndarray  # float32 (stat, layer, head), STATS order
    edges: tuple  # (layer, head, query, key) int16 arrays and weight float32, pairs kept
    covered: np.ndarray  # float32 (layer, head): mean over rows of the weight the kept pairs hold
    js_sum: np.ndarray  # float64 (pairs,): sum over rows of JS(head a's row, head b's row), a < b
    js_rows: int
    syntax: object | None = None  # attnviz.atlas.syntax.SentenceSyntax of this sentence, with a parse
    parse: object | None = None  # the sentence's attnviz.atlas.syntax.Parsed, when known


TINY = np.float32(1e-30)  # p log(p + TINY): 0 at p = 0, and below float32 resolution elsewhere


def _plogp_rows(p: np.ndarray) -> np.ndarray:
    """Σ_k p log p over the last axis (float32 products, float64 sums)."""
    return np.einsum("...k,...k->...", p, np.log(p + TINY), dtype=np.float64)


def js_pair_sums(maps: np.ndarray, rows: np.ndarray, chunk: int = 1024) -> np.ndarray:
    """Sum over `rows` of the Jensen-Shannon divergence (nats) between every pair of heads' rows, in float32
    with float64 sums (about 1e-7 per row from exact). maps: (head, query, key) with every head of every
    layer flattened; returns (head·(head-1)/2,) in np.triu_indices order (a < b)."""
    p = np.ascontiguousarray(np.asarray(maps, dtype=np.float32)[:, rows, :])
    own = _plogp_rows(p)  # (head, row)
    a, b = np.triu_indices(p.shape[0], 1)
    out = np.empty(a.size)
    for s in range(0, a.size, chunk):
        ia, ib = a[s:s + chunk], b[s:s + chunk]
        m = (p[ia] + p[ib]) * np.float32(0.5)
        out[s:s + chunk] = (0.5 * (own[ia] + own[ib]) - _plogp_rows(m)).sum(-1)
    return np.maximum(out, 0.0)


def top_edges(att: np.ndarray, rows: np.ndarray, top: int = EDGE_TOP, floor: float = EDGE_MIN):
    """(layer, head, query, key, weight) of each row's `top` largest weights that are >= floor, and the
    mean over rows of the weight they hold (layer, head)."""
    n_l, n_h, _, n_k = att.shape
    sub = att[:, :, rows, :]
    k = min(top, n_k)
    idx = np.argpartition(-sub, k - 1, axis=-1)[..., :k]  # (l, h, r, k)
    w = np.take_along_axis(sub, idx, axis=-1)
    keep = w >= floor
    covered = np.where(keep, w, 0.0).sum(-1).mean(-1).astype(np.float32)
    l_, h_, r_, j_ = np.nonzero(keep)
    edges = (l_.astype(np.int16), h_.astype(np.int16), rows[r_].astype(np.int16),
             idx[l_, h_, r_, j_].astype(np.int16), w[l_, h_, r_, j_].astype(np.float32))
    return edges, covered


def head_stats(result) -> np.ndarray:
    """float32 (stat, layer, head) of one AttentionResult, STATS order: entropy and normalised entropy
    (head means over valid rows), mean distance Σ_j a_ij |i - j| and the role scores."""
    att = result.attention
    n_l, n_h, n, _ = att.shape
    allowed, valid = result_masks(result)
    ent = RowEntropy(None if allowed.all() else allowed, shape=(n, n))
    # every head at once (the weights outside `allowed` are 0, so they add nothing)
    plogp = np.einsum("...k,...k->...", att, np.log(att + np.float32(ent.eps)), dtype=np.float32).reshape(-1, n)
    nats, norm = ent.finish(plogp, (n_l, n_h))
    reader = RoleReader(result.tokens, result.special_mask, causal=result.facts.causal)
    roles = np.stack([reader.layer(att[l]) for l in range(n_l)], axis=1)  # (role, layer, head)
    roles[ROLE_KEYS.index("broad")] = broadness(nats, allowed.sum(axis=-1))[..., reader.q].mean(axis=-1)
    dist = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(np.float32)
    per_row = np.einsum("lhqk,qk->lhq", att, dist)
    out = np.empty((len(STATS), n_l, n_h), dtype=np.float32)
    out[0], out[1], out[2] = head_mean(nats, valid), head_mean(norm, valid), head_mean(per_row, valid)
    out[3:] = roles
    return out


def sentence_record(sid: int, result, parse=None, *, words: bool = True, tokenizer=None) -> SentenceRecord:
    """Everything the store keeps of one sentence's AttentionResult (see the module docstring)."""
    from attnviz.words.merge import merge_words

    seen = merge_words(result) if words else result
    n_l, n_h, n, _ = seen.attention.shape
    _, valid = result_masks(seen)
    rows = np.flatnonzero(valid)
    edges, covered = top_edges(seen.attention, rows)
    js = js_pair_sums(seen.attention.reshape(n_l * n_h, n, n), rows)
    parse_word = np.full(n, -1, dtype=np.int32)
    syntax = None
    if parse is not None and tokenizer is not None:
        from attnviz.atlas import syntax as sx

        syntax = sx.sentence_syntax(tokenizer, parse, result.attention)
        starts = np.asarray(seen.word_starts if seen.word_starts is not None else range(result.seq_len))
        parse_word = syntax.piece_word[starts].astype(np.int32)
    trunc = result.truncation
    return SentenceRecord(sid=sid, text=result.text, n_pieces=result.seq_len,
                          truncated=bool(trunc and trunc.truncated), tokens=seen.tokens,
                          special=np.asarray(seen.special_mask, dtype=bool), parse_word=parse_word,
                          stats=head_stats(seen), edges=edges, covered=covered, js_sum=js, js_rows=int(rows.size),
                          syntax=syntax, parse=parse)
