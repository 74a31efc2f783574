"""Pure transforms that choose what a heatmap shows: hidden special tokens, pair blocks, colour scaling."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.errors import BadInput

# Sentence-pair blocks: name -> (query segment, key segment); None = all positions.
PAIR_BLOCKS = {
    "all": (None, None),
    "A→A": (0, 0),
    "B→B": (1, 1),
    "A→B": (0, 1),
    "B→A": (1, 0),
}
COLOUR_SCALES = ("linear", "clip", "log")


@dataclass(frozen=True)
class MatrixView:
    """A 2-D slice ready to plot, with the original positions of its rows and columns."""

    values: np.ndarray  # (n_rows, n_cols) float32
    rows: np.ndarray  # int (n_rows,): original query positions
    cols: np.ndarray  # int (n_cols,): original key positions
    renormalised: bool  # rows rescaled after hiding special tokens: values are not the model's weights


def select_view(matrix: np.ndarray, special_mask: np.ndarray | None = None,
                segment_ids: np.ndarray | None = None, *, hide_special: bool = False,
                renormalise: bool = True, block: str = "all", key_special_mask: np.ndarray | None = None,
                ) -> MatrixView:
    """Rows/columns of one head's (query, key) matrix to show.

    hide_special drops special-token rows and columns; renormalise then rescales each kept
    row to sum to 1 over the keys left (rows whose kept mass is 0 stay 0). block picks a
    sentence-pair block; it never renormalises by itself (its rows show the model's weights).
    key_special_mask: special mask of the keys when they differ from the queries (cross-attention).
    """
    m = np.asarray(matrix)
    if m.ndim != 2:
        raise BadInput(f"expected one head's (query, key) matrix, got shape {m.shape}")
    if block not in PAIR_BLOCKS:
        raise BadInput(f"unknown block {block!r}; choose one of {', '.join(PAIR_BLOCKS)}")
    n_q, n_k = m.shape
    rows_ok = np.ones(n_q, dtype=bool)
    keys_shown = np.ones(n_k, dtype=bool)  # keys left after hiding special tokens
    k_special = special_mask if key_special_mask is None else key_special_mask
    if hide_special:
        if special_mask is not None:
            rows_ok &= ~np.asarray(special_mask, dtype=bool)
        if k_special is not None:
            keys_shown &= ~np.asarray(k_special, dtype=bool)
    cols_ok = keys_shown.copy()
    q_seg, k_seg = PAIR_BLOCKS[block]
    if q_seg is not None:
        if segment_ids is None or not np.any(np.asarray(segment_ids) == 1):
            raise BadInput("Sentence-pair blocks need a second sentence: switch on 'Sentence pair' in the sidebar.")
        seg = np.asarray(segment_ids)
        rows_ok &= seg == q_seg
        cols_ok &= seg == k_seg
    rows, cols = np.flatnonzero(rows_ok), np.flatnonzero(cols_ok)
    if rows.size == 0 or cols.size == 0:
        raise BadInput("Nothing is left to show: every row or column was hidden. Show special tokens again.")
    values = m[np.ix_(rows, cols)].astype(np.float32)
    # Only hiding tokens renormalises: a pair block shows the model's own weights. A row is divided
    # by its weight on every key left after hiding (in both sentences), so a block's rows keep
    # the share the other sentence took.
    dropped_cols = not keys_shown.all()
    if renormalise and dropped_cols:
        total = m[np.ix_(rows, np.flatnonzero(keys_shown))].astype(np.float32).sum(axis=1, keepdims=True)
        values = np.divide(values, total, out=np.zeros_like(values), where=total > 0)
    return MatrixView(values, rows, cols, renormalised=bool(renormalise and dropped_cols))


def block_weights(matrix: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[float, float]:
    """(mean over `rows` of each row's total weight on `cols`, largest single weight in the block), read
    from the model's own (query, key) matrix: what a sentence-pair block gives the other block."""
    block = np.asarray(matrix, dtype=np.float64)[np.ix_(np.asarray(rows), np.asarray(cols))]
    if block.size == 0:
        raise BadInput("The block is empty: both sentences need at least one token.")
    return float(block.sum(axis=1).mean()), float(block.max())


@dataclass(frozen=True)
class FocusView:
    """One token's row (what it attends to) or column (what attends to it) in every head of a layer."""

    values: np.ndarray  # (head, n_shown) float32
    positions: np.ndarray  # int (n_shown,): original positions along the token axis
    renormalised: bool  # rows rescaled over the keys left after hiding special tokens


def focus_view(layer_attention: np.ndarray, token: int, special_mask: np.ndarray | None = None, *,
               direction: str = "out", hide_special: bool = False, renormalise: bool = True,
               key_special_mask: np.ndarray | None = None) -> FocusView:
    """`token`'s row ("out") or column ("in") in every head, as select_view shows one head.

    layer_attention: (head, query, key). hide_special drops special positions from the token axis
    (keys for "out", queries for "in"); renormalise then divides each query's weights by its weight on
    the keys left, as the heatmap does. A hidden focus token is refused with a plain sentence."""
    a = np.asarray(layer_attention, dtype=np.float32)  # (head, query, key)
    if a.ndim != 3:
        raise BadInput(f"expected one layer's (head, query, key) attention, got shape {a.shape}")
    if direction not in ("out", "in"):
        raise BadInput(f"unknown direction {direction!r}; choose 'out' or 'in'")
    n_q, n_k = a.shape[1:]
    q_special = np.zeros(n_q, bool) if special_mask is None else np.asarray(special_mask, dtype=bool)
    k_special = q_special if key_special_mask is None else np.asarray(key_special_mask, dtype=bool)
    keys = ~k_special if hide_special else np.ones(n_k, bool)
    queries = ~q_special if hide_special else np.ones(n_q, bool)
    if not 0 <= token < (n_q if direction == "out" else n_k):
        raise BadInput(f"Token position {token} is outside the text.")
    if hide_special and (q_special if direction == "out" else k_special)[token]:
        raise BadInput("The focus token is a special token, and special tokens are hidden: pick another token, "
                       "or show special tokens again.")
    renorm = bool(renormalise and hide_special and not keys.all())
    positions = np.flatnonzero(keys if direction == "out" else queries)
    if positions.size == 0:
        raise BadInput("Nothing is left to show: every token is a special token. Show special tokens again.")
    values = a[:, token, positions] if direction == "out" else a[:, positions, token]  # (head, n_shown)
    if renorm:
        if direction == "out":  # (head, 1): the token's weight on the keys shown
            totals = values.sum(axis=1, keepdims=True)
        else:  # (head, n_shown): each query's weight on the keys shown (a pass over the layer: only when renormalising)
            totals = a[:, positions] @ keys.astype(np.float32)
        values = np.divide(values, totals, out=np.zeros_like(values), where=totals > 0)
    return FocusView(values.astype(np.float32), positions, renorm)


LOG_FLOOR = 1e-4  # smallest weight the log colour scale distinguishes


def colour_range(values: np.ndarray, scale: str = "linear", clip_percentile: float = 99.0
                 ) -> tuple[float, float, float | None]:
    """(zmin, zmax, log_floor) for colouring exact weights.

    'clip' caps the colour range at a percentile, so a few large weights (often on special
    tokens) do not wash out the rest; 'log' returns a floor: colours then follow log10 of the
    weight between the floor and the maximum (see plots.log_colorscale). The plotted values
    stay the exact weights in every mode."""
    v = np.asarray(values, dtype=np.float32)
    if scale not in COLOUR_SCALES:
        raise BadInput(f"unknown colour scale {scale!r}")
    top = max(float(v.max()) if v.size else 1.0, 1e-6)
    if scale == "clip":
        hi = float(np.percentile(v, clip_percentile)) if v.size else 1.0
        return 0.0, max(hi, 1e-6), None
    if scale == "log":
        return 0.0, top, min(LOG_FLOOR, top / 10)
    return 0.0, top, None
