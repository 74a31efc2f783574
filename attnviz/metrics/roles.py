"""Head role scores (Clark et al. 2019 style): [CLS], [SEP], self, previous, next, broad, punctuation, sink."""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from attnviz.errors import BadInput
from attnviz.attention import allowed_keys
from attnviz.metrics.entropy import padding_positions, row_entropy
from attnviz.units import count_text

# role key -> (short label, definition shown on the page). Order = tie-break order.
ROLES: dict[str, tuple[str, str]] = {
    "cls": ("attends to [CLS]", "mean over queries of the weight on the [CLS]-like first special token "
            "([CLS], <s>, BOS); undefined when the input has none"),
    "sep": ("attends to [SEP]", "mean over queries of the total weight on the other special tokens "
            "([SEP], </s>, EOS); undefined when there are none"),
    "self": ("self", "mean over queries i of the weight on key i (the diagonal)"),
    "prev": ("previous token", "mean over queries i >= 1 of the weight on key i - 1"),
    "next": ("next token", "mean over queries i <= n - 2 of the weight on key i + 1; undefined for "
             "causal models, which cannot look ahead"),
    "broad": ("broad", "mean over queries of (e^H − 1) / (k − 1), where H is the row's entropy in nats and k "
              "the number of keys it may see: e^H is the effective number of keys attended, so the score is 0 "
              "for all weight on one key and 1 for uniform attention (0 when k = 1)"),
    "punct": ("punctuation", "mean over queries of the total weight on punctuation tokens "
              "(. , ; ! ? …); undefined when the text has none"),
    "first": ("first-token sink", "mean over queries of the weight on position 0, whatever token it is"),
}
ROLE_KEYS = tuple(ROLES)
# Roles a causal model's heads cannot have, and why (the page says so instead of listing them).
CAUSAL_LEFT_OUT: dict[str, str] = {
    "cls": "a causal model has no [CLS]: weight on its first position is the first-token sink",
    "sep": "a causal model's end-of-text token comes last, so no other token can attend to it",
    "next": "a causal model cannot attend to the next token",
}
# Why a role can be undefined for every head of a model on its inputs.
UNDEFINED = {
    "cls": "the inputs start with no [CLS]-like special token",
    "sep": "the inputs hold no [SEP]-like special token",
    "next": "no input has a next token",
    "punct": "the inputs hold no punctuation",
}


@dataclass(frozen=True)
class RoleScores:
    """Role scores of every head; nan where a role is undefined for the input."""

    scores: np.ndarray  # float32 (role, layer, head), roles in `roles` order
    n_inputs: int = 1  # how many inputs were averaged
    roles: tuple[str, ...] = ROLE_KEYS  # the role keys of the first axis

    def __getitem__(self, role: str) -> np.ndarray:
        return self.scores[self.roles.index(role)]

    def only(self, roles) -> "RoleScores":
        """These scores restricted to `roles` (keys of ROLES, in the order given)."""
        roles = tuple(roles)
        return RoleScores(self.scores[[self.roles.index(r) for r in roles]], self.n_inputs, roles)


def applicable_roles(scores: RoleScores, causal: bool) -> tuple[tuple[str, ...], dict[str, str]]:
    """(roles to show, {role left out: why}): a role is shown when it applies to the model's kind (a causal
    model has no [CLS], no [SEP] others can see and no next token: CAUSAL_LEFT_OUT) and at least one head has
    a score for it on the inputs."""
    shown, left_out = [], {}
    for role in scores.roles:
        if causal and role in CAUSAL_LEFT_OUT:
            left_out[role] = CAUSAL_LEFT_OUT[role]
        elif np.isnan(scores[role]).all():
            left_out[role] = UNDEFINED.get(role, "it is undefined for these inputs")
        else:
            shown.append(role)
    return tuple(shown), left_out


@lru_cache(maxsize=1 << 16)  # a vocabulary's tokens: each is classified once per process
def is_punctuation(token: str) -> bool:
    """True for a token made only of punctuation characters (after dropping '##')."""
    t = token[2:] if token.startswith("##") else token
    return bool(t) and all(unicodedata.category(c).startswith("P") for c in t)


def role_positions(tokens, special_mask) -> dict[str, np.ndarray]:
    """bool (seq_len,) masks of the positions the 'cls', 'sep' and 'punct' roles look at."""
    special = np.asarray(special_mask, dtype=bool)
    n = len(tokens)
    pad = padding_positions(tokens, special)
    cls = np.zeros(n, dtype=bool)
    if n and special[0] and not pad[0]:
        cls[0] = True
    sep = special & ~pad & ~cls
    punct = np.array([not s and is_punctuation(t) for t, s in zip(tokens, special)], dtype=bool)
    return {"cls": cls, "sep": sep, "punct": punct}


def role_scores(attention: np.ndarray, tokens, special_mask, *, causal: bool = False,
                row_nats: np.ndarray | None = None) -> RoleScores:
    """Role scores for every head of one input.

    attention: (layer, head, n, n); tokens, special_mask: length n.
    row_nats: optional (layer, head, n) row entropies in nats (entropy.row_entropy), reused when given.
    Scores are means over the non-padding query rows; each lies in [0, 1].
    """
    att = np.asarray(attention)
    if att.ndim != 4 or att.shape[2] != att.shape[3]:
        raise BadInput(f"attention must be (layer, head, n, n), got shape {att.shape}")
    n_layers, n_heads, n, _ = att.shape
    if len(tokens) != n or len(special_mask) != n:
        raise BadInput(f"{count_text(len(tokens))} tokens for {n} attention positions")
    reader = RoleReader(tokens, special_mask, causal=causal)
    out = np.full((len(ROLE_KEYS), n_layers, n_heads), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        out[:, layer] = reader.layer(att[layer])
    q = reader.q
    idx = {role: ROLE_KEYS.index(role) for role in ROLE_KEYS}
    allowed = allowed_keys(n, causal) & ~padding_positions(tokens, special_mask)[None, :]
    if row_nats is None:
        row_nats, _ = row_entropy(att, allowed)
    out[idx["broad"]] = broadness(row_nats, allowed.sum(axis=-1))[..., q].mean(axis=-1)
    return RoleScores(out)


class RoleReader:
    """Reads every role score except 'broad' from a layer's (head, n, n) matrices; built once per input."""

    def __init__(self, tokens, special_mask, *, causal: bool = False):
        n = len(tokens)
        pos = role_positions(tokens, special_mask)
        self.q = np.flatnonzero(~padding_positions(tokens, special_mask))  # valid query rows
        self.qp = self.q[self.q >= 1]  # queries that have a previous token
        self.qn = self.q[self.q <= n - 2] if not causal else self.q[:0]  # ... a next token
        self.idx = {role: ROLE_KEYS.index(role) for role in ROLE_KEYS}
        # weight of each query row in a mean over the valid rows: 1/|q| there, 0 at padding
        self.row_weight = np.zeros(n, dtype=np.float32)
        self.row_weight[self.q] = 1.0 / max(self.q.size, 1)
        self.col_groups = [(ROLE_KEYS.index(r), np.flatnonzero(pos[r])) for r in ("cls", "sep", "punct")
                           if pos[r].any()]
        # the key columns layer() reads of col_mean: position 0 and every column role's
        self.columns = np.unique(np.concatenate([[0], *(cols for _, cols in self.col_groups)])).astype(np.int64)

    def layer(self, ms: np.ndarray, col_mean: np.ndarray | None = None, near: np.ndarray | None = None) -> np.ndarray:
        """float32 (role, head) scores of every head of one layer at once; ms: (head, query, key).
        The plain per-row definitions, vectorised (tests compare them): a mean over queries of the weight
        summed over a set of key columns is the sum over those columns of the column means, so one
        weighted column mean per head (a matrix-vector product) serves every column role.
        col_mean: (head, key) row_weight @ ms, when the caller has it already; near: (3, head, query) each row's
        weight on key i, i - 1 and i + 1 (0 where there is none), when the caller has them already (read from ms,
        they are a gather across 75 MB at 512 tokens, a cache miss each)."""
        out = np.full((len(ROLE_KEYS), ms.shape[0]), np.nan, dtype=np.float32)
        if col_mean is None:
            col_mean = self.row_weight @ ms  # (head, key): mean over the valid query rows
        out[self.idx["first"]] = col_mean[:, 0]
        for i, cols in self.col_groups:
            out[i] = col_mean[:, cols].sum(axis=1)
        if near is None:
            out[self.idx["self"]] = ms[:, self.q, self.q].mean(axis=1)
            if self.qp.size:
                out[self.idx["prev"]] = ms[:, self.qp, self.qp - 1].mean(axis=1)
            if self.qn.size:
                out[self.idx["next"]] = ms[:, self.qn, self.qn + 1].mean(axis=1)
        else:
            out[self.idx["self"]] = near[0][:, self.q].mean(axis=1)
            if self.qp.size:
                out[self.idx["prev"]] = near[1][:, self.qp].mean(axis=1)
            if self.qn.size:
                out[self.idx["next"]] = near[2][:, self.qn].mean(axis=1)
        return out


def broadness(row_nats: np.ndarray, n_keys: np.ndarray) -> np.ndarray:
    """(e^H - 1) / (k - 1) per row: 0 = one key, 1 = uniform over the k allowed keys; 0 when k = 1.

    row_nats: (..., query) entropies in nats; n_keys: (query,) keys each row may see."""
    k = np.asarray(n_keys, dtype=np.float64)
    eff = np.exp(np.asarray(row_nats, dtype=np.float64)) - 1.0
    out = np.divide(eff, k - 1.0, out=np.zeros(eff.shape), where=k > 1)
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def result_role_scores(result, row_nats: np.ndarray | None = None) -> RoleScores:
    """role_scores() of an AttentionResult's (self-)attention."""
    return role_scores(result.attention, result.tokens, result.special_mask,
                       causal=result.facts.causal, row_nats=row_nats)


def average_scores(items: list[RoleScores]) -> RoleScores:
    """Mean of several inputs' scores, per role and head, over the inputs where it is defined."""
    if not items:
        raise BadInput("No inputs to average role scores over.")
    shapes = {s.scores.shape for s in items}
    if len(shapes) != 1:
        raise BadInput("Role scores come from models with different numbers of layers or heads.")
    stack = np.stack([s.scores for s in items])
    defined = ~np.isnan(stack)
    total = np.where(defined, stack, 0).sum(axis=0)
    count = defined.sum(axis=0)
    mean = np.divide(total, count, out=np.full(total.shape, np.nan, dtype=np.float32), where=count > 0)
    return RoleScores(mean.astype(np.float32), n_inputs=sum(s.n_inputs for s in items), roles=items[0].roles)


def strongest_role(scores: RoleScores, min_score: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(role index (layer, head) int, its score): the highest defined score of each head;
    -1 where every score is below min_score (no clear role). Ties go to the earlier role."""
    s = np.where(np.isnan(scores.scores), -np.inf, scores.scores)
    best = s.argmax(axis=0)
    value = np.take_along_axis(s, best[None], axis=0)[0]
    best = np.where(value >= min_score, best, -1)
    return best, np.where(np.isfinite(value), value, np.nan).astype(np.float32)


def top_heads(scores: RoleScores, role: str, k: int = 5) -> list[tuple[int, int, float]]:
    """The k heads with the highest score for a role: [(layer, head, score)], best first."""
    if role not in ROLES:
        raise BadInput(f"Unknown role {role!r}.")
    vals = scores[role]
    if np.isnan(vals).all():
        return []
    flat = np.where(np.isnan(vals), -np.inf, vals).reshape(-1)
    order = np.argsort(-flat, kind="stable")[:k]
    n_heads = vals.shape[1]
    return [(int(i // n_heads), int(i % n_heads), float(flat[i])) for i in order if np.isfinite(flat[i])]
