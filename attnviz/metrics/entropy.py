"""Attention entropy per query row (nats and normalised) and per head, with masked keys excluded."""
from __future__ import annotations

import numpy as np

from attnviz.attention import allowed_keys
from attnviz.errors import BadInput

EPS = 1e-12  # added inside the log so that p = 0 gives 0 * log(eps) = 0, never nan
# Labels of padding tokens across tokenizers (only counted when also flagged special).
PAD_TOKENS = frozenset({"[PAD]", "<pad>", "<|pad|>", "<PAD>"})


def padding_positions(tokens, special_mask) -> np.ndarray:
    """bool (seq_len,): True at padding tokens (left out of head means). Not attention.padding_mask,
    which is True at the real tokens of a padded batch."""
    special = np.asarray(special_mask, dtype=bool)
    return np.array([bool(s) and t in PAD_TOKENS for t, s in zip(tokens, special)], dtype=bool)


def result_masks(result) -> tuple[np.ndarray, np.ndarray]:
    """(allowed (query, key) bool, valid queries (query,) bool) for an AttentionResult.

    Padding keys are not allowed; padding query rows are not valid.
    """
    pad = padding_positions(result.tokens, result.special_mask)
    allowed = allowed_keys(result.seq_len, result.facts.causal)
    if pad.any():
        allowed = allowed & ~pad[None, :]
    return allowed, ~pad


def row_entropy(attention: np.ndarray, allowed: np.ndarray | None = None, *, eps: float = EPS
                ) -> tuple[np.ndarray, np.ndarray]:
    """Entropy of every attention row.

    attention: (..., query, key) rows of probabilities (e.g. (layer, head, query, key)).
    allowed: optional bool (query, key): keys each row may attend to; weights elsewhere are
      ignored. None = every key.
    Returns (nats, normalised), both float32 (..., query). normalised = nats / log(number of
    allowed keys of the row), in [0, 1]; a row with a single allowed key (or none) gets 0.
    """
    att = np.asarray(attention)
    if att.ndim < 2:
        raise BadInput(f"attention must have at least (query, key) axes, got shape {att.shape}")
    n_q, n_k = att.shape[-2:]
    if allowed is not None:
        allowed = np.asarray(allowed, dtype=bool)
        if allowed.shape != (n_q, n_k):
            raise BadInput(f"the key mask has shape {allowed.shape}, expected {(n_q, n_k)}")
        if allowed.all():
            allowed = None
    lead = att.shape[:-2]
    flat = att.reshape((-1, n_q, n_k))
    out = np.empty(flat.shape[:2], dtype=np.float32)
    kernel = RowEntropy(allowed, eps)
    for i in range(flat.shape[0]):  # one (query, key) matrix at a time: stays in cache
        out[i] = kernel.plogp(flat[i])
    return kernel.finish(out, lead)


class RowEntropy:
    """The per-matrix kernel of row_entropy, reusable inside other one-pass loops."""

    def __init__(self, allowed: np.ndarray | None, eps: float = EPS, shape: tuple[int, int] | None = None):
        self.allowed = allowed
        self.mask_f = None if allowed is None else allowed.astype(np.float32)
        self.eps = eps
        self.buf = None if shape is None else np.empty(shape, dtype=np.float32)

    def plogp(self, p: np.ndarray) -> np.ndarray:
        """sum_k p log(p + eps) of every row of one (query, key) matrix -> (query,)."""
        if self.buf is None or self.buf.shape != p.shape:
            self.buf = np.empty(p.shape, dtype=np.float32)
        if self.mask_f is not None:
            p = p * self.mask_f
        np.add(p, self.eps, out=self.buf)
        with np.errstate(invalid="ignore"):  # negative weights give nan, reported in finish()
            np.log(self.buf, out=self.buf)
        return np.einsum("qk,qk->q", p, self.buf)

    def finish(self, plogp: np.ndarray, lead: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
        """(nats, normalised) from stacked plogp rows (m, query), reshaped to lead + (query,)."""
        out = np.array(plogp, dtype=np.float32)
        if not np.isfinite(out).all():  # nan/inf weights, or negative ones (log of < 0)
            raise BadInput("attention weights must be finite and non-negative")
        n_q = out.shape[-1]
        np.negative(out, out=out)
        np.maximum(out, 0.0, out=out)  # -p log(p + eps) can be a hair below 0 for one-hot rows
        n_keys = self.buf.shape[-1] if self.buf is not None else n_q
        n_allowed = np.full(n_q, n_keys) if self.allowed is None else self.allowed.sum(axis=-1)
        log_n = np.log(np.maximum(n_allowed, 1)).astype(np.float32)
        norm = np.divide(out, log_n, out=np.zeros_like(out), where=log_n > 0)
        np.minimum(norm, 1.0, out=norm)
        return out.reshape(tuple(lead) + (n_q,)), norm.reshape(tuple(lead) + (n_q,))


def head_mean(per_row: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """Mean over the query axis (last) of per-row values, over valid rows only.

    per_row: (..., query); valid: bool (query,) or None = all rows. Returns (...,).
    """
    vals = np.asarray(per_row)
    if valid is None:
        return vals.mean(axis=-1)
    valid = np.asarray(valid, dtype=bool)
    if valid.shape != vals.shape[-1:]:
        raise BadInput(f"the row mask has {valid.shape[0]} entries for {vals.shape[-1]} rows")
    if not valid.any():
        raise BadInput("Every row is masked out, so there is nothing to average.")
    return vals[..., valid].mean(axis=-1)


def entropy_summary(nats: np.ndarray, norm: np.ndarray, valid: np.ndarray) -> dict[str, np.ndarray]:
    """The dict head_entropy returns, from per-row (layer, head, query) values."""
    return {"nats": nats, "normalised": norm,
            "head_nats": head_mean(nats, valid), "head_normalised": head_mean(norm, valid)}


def head_entropy(result, *, include_special: bool = True) -> dict[str, np.ndarray]:
    """Per-row and per-head entropy of a result's (self-)attention.

    Returns {"nats": (layer, head, query), "normalised": (layer, head, query),
    "head_nats": (layer, head), "head_normalised": (layer, head)}; head means skip padding
    rows, and special-token rows too when include_special is False.
    """
    allowed, valid = result_masks(result)
    if not include_special:
        valid = valid & ~np.asarray(result.special_mask, dtype=bool)
        if not valid.any():
            raise BadInput("The input has only special tokens; include them to see an average.")
    nats, norm = row_entropy(result.attention, allowed)
    return entropy_summary(nats, norm, valid)
