"""The strongest query -> key attention pairs of one head across several sentences (what exBERT lets you
search for): reading a head's top pairs over a corpus says more about it than one sentence does."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput
from attnviz.units import count_text


@dataclass(frozen=True)
class Pair:
    """One attention weight of one head in one sentence."""

    weight: float
    sentence: int  # index of the sentence in the input list
    query: int  # position of the attending token
    key: int  # position of the attended token
    query_token: str
    key_token: str
    context: str  # the sentence's tokens with the query in «» and the key in [[ ]]


def _context(tokens, query: int, key: int, width: int) -> str:
    lo, hi = max(0, min(query, key) - width), min(len(tokens), max(query, key) + width + 1)
    out = []
    for i in range(lo, hi):
        t = tokens[i]
        if i == query and i == key:
            t = f"«[[{t}]]»"
        elif i == query:
            t = f"«{t}»"
        elif i == key:
            t = f"[[{t}]]"
        out.append(t)
    return ("… " if lo > 0 else "") + " ".join(out) + (" …" if hi < len(tokens) else "")


def top_pairs(items, k: int = 20, *, skip_special: bool = True, skip_self: bool = False,
              context_width: int = 6) -> list[Pair]:
    """The k largest weights of one head over several inputs, largest first.

    items: [(matrix (n, n) of one head's attention, tokens (n,), special_mask (n,))] per sentence.
    skip_special: leave out pairs whose query or key is a special token ([CLS], [SEP] ...), which
    otherwise take most of the top places in BERT. skip_self: leave out query == key."""
    if k < 1:
        raise BadInput("Ask for at least one pair.")
    candidates = []  # (weight, sentence, query, key)
    for s, (m, tokens, special) in enumerate(items):
        m = np.asarray(m, dtype=np.float64)
        n = len(tokens)
        if m.shape != (n, n):
            raise BadInput(f"sentence {s}: a {m.shape} matrix for {count_text(n)} tokens")
        keep = np.ones((n, n), dtype=bool)
        if skip_special:
            spec = np.asarray(special, dtype=bool)
            keep &= ~spec[:, None] & ~spec[None, :]
        if skip_self:
            np.fill_diagonal(keep, False)
        q, j = np.nonzero(keep)
        if q.size == 0:
            continue
        w = m[q, j]
        best = np.argsort(-w, kind="stable")[:k]  # at most k per sentence can make the overall top k
        candidates += [(float(w[b]), s, int(q[b]), int(j[b])) for b in best]
    candidates.sort(key=lambda c: (-c[0], c[1], c[2], c[3]))
    out = []
    for weight, s, q, j in candidates[:k]:
        tokens = items[s][1]
        out.append(Pair(weight=weight, sentence=s, query=q, key=j, query_token=tokens[q], key_token=tokens[j],
                        context=_context(tokens, q, j, context_width)))
    return out


def offset_counts(pairs: list[Pair]) -> dict[int, int]:
    """How many pairs have each key - query offset (-1 = previous token, 0 = itself, +1 = next)."""
    counts: dict[int, int] = {}
    for p in pairs:
        counts[p.key - p.query] = counts.get(p.key - p.query, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
