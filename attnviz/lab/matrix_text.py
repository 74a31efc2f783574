"""Parse and format small matrices typed as text (one row per line), with plain errors."""
from __future__ import annotations

import re

import numpy as np

from attnviz.errors import BadInput

MAX_SIDE = 32  # largest number of rows or columns the lab accepts: beyond this nothing is readable
MAX_ENTRY = 1000  # largest size of an entry: the scores stay finite and their exponentials and cells readable

_SPLIT = re.compile(r"[,\s;]+")


def parse_matrix(text: str, name: str = "The matrix", max_side: int = MAX_SIDE) -> np.ndarray:
    """Text -> float64 (rows, cols). Rows are lines; entries are separated by spaces or commas;
    brackets are ignored, so '[[1, 0], [0, 1]]' also works.

    Raises BadInput naming the row and entry for a non-number, a ragged row, an empty
    matrix, nan/inf, an entry larger than MAX_ENTRY either way, or more than max_side rows or columns.
    """
    text = (text or "").replace("],", "]\n")
    lines = [ln.strip().strip("[]").strip() for ln in text.splitlines()]
    lines = [ln.strip("[], ") for ln in lines if ln.strip("[], ")]
    if not lines:
        raise BadInput(f"{name} is empty: type at least one row of numbers.")
    rows: list[list[float]] = []
    for r, line in enumerate(lines, start=1):
        row = []
        for c, token in enumerate((t for t in _SPLIT.split(line) if t), start=1):
            try:
                value = float(token)
            except ValueError:
                raise BadInput(f"{name}, row {r}, entry {c}: '{token}' is not a number.") from None
            if not np.isfinite(value):
                raise BadInput(f"{name}, row {r}, entry {c}: '{token}' is not a finite number.")
            if abs(value) > MAX_ENTRY:
                raise BadInput(f"{name}, row {r}, entry {c}: {token} is larger than the lab takes (at most "
                               f"{MAX_ENTRY:,} either way): its scores would overflow to infinity or fill their "
                               "cells with digits.")
            row.append(value)
        if rows and len(row) != len(rows[0]):
            raise BadInput(f"{name} is ragged: row {r} has {_count(len(row))} but row 1 has "
                           f"{_count(len(rows[0]))}. Every row needs the same number of entries.")
        rows.append(row)
    m = np.array(rows, dtype=np.float64)
    if m.shape[0] > max_side or m.shape[1] > max_side:
        raise BadInput(f"{name} is {m.shape[0]} x {m.shape[1]}; the lab takes at most "
                       f"{max_side} rows and {max_side} columns so every number stays readable.")
    return m


def _count(n: int) -> str:
    return f"{n} number" if n == 1 else f"{n} numbers"


def format_number(x: float, digits: int = 4) -> str:
    """Compact text for one entry: integers without decimals, others with `digits` decimals."""
    if not np.isfinite(x):
        return "-inf" if x < 0 else ("inf" if x > 0 else "nan")
    if float(x).is_integer() and abs(x) < 1e9:
        return str(int(x))
    return f"{x:.{digits}f}"


def format_matrix(m: np.ndarray, digits: int = 4) -> str:
    """(rows, cols) -> text that parse_matrix reads back (one row per line)."""
    m = np.atleast_2d(np.asarray(m, dtype=np.float64))
    return "\n".join("  ".join(format_number(x, digits) for x in row) for row in m)
