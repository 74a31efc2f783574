"""The compiled loops' vectorised row maximum, against numpy."""
from __future__ import annotations

import numpy as np

from attnviz import compiled


def _largest(rows: list[np.ndarray]) -> np.ndarray:
    nb = compiled.numba()
    from attnviz.vecmath import largest

    @nb.njit
    def run(row):
        return largest(row)

    return np.array([run(r) for r in rows], dtype=np.float32)


def test_largest_is_numpys_maximum_at_every_length_and_position():
    rng = np.random.default_rng(3)
    rows, want = [], []
    for n in (1, 2, 15, 16, 17, 31, 33, 100, 8192):
        for where in sorted({0, n // 2, n - 1}):
            row = rng.normal(-5.0, 3.0, n).astype(np.float32)
            row[where] = 40.0 + n  # the maximum in the vector part, the tail, the first and last lanes
            rows.append(row)
            want.append(np.float32(40.0 + n))
    got = _largest(rows)
    assert np.array_equal(got, np.array(want, dtype=np.float32))
    assert np.array_equal(got, np.array([r.max() for r in rows], dtype=np.float32))


def test_largest_of_hidden_keys_and_an_empty_row():
    row = np.full(37, -1e30, dtype=np.float32)  # every key hidden (the scores' stand-in for -inf)
    row[36] = -2e29
    got = _largest([row, row[:36], np.empty(0, dtype=np.float32)])
    assert got[0] == np.float32(-2e29)
    assert got[1] == np.float32(-1e30)
    assert got[2] == np.float32(-3e38)
