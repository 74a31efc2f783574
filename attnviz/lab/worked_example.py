"""The seeds' 3-token worked example (d_k = 4) and its correct values, computed, not copied."""
from __future__ import annotations

import numpy as np

# Q, K, V of the worked example in seed 003 (section 18.5.3). The seed prints wrong softmax
# weights for it (0.2312, 0.2312, 0.5376 for row 1); the pages compute the right ones.
Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], dtype=np.float64)
K = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], dtype=np.float64)
V = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], dtype=np.float64)
TOKENS = ("tok 1", "tok 2", "tok 3")

# What the seed printed for the softmax of row 1, kept only to show the slip on the page.
SEED_PRINTED_ROW1 = np.array([0.2312, 0.2312, 0.5376])


def softmax_row_by_hand(scores: np.ndarray) -> list[tuple[float, float, float]]:
    """For one row of scores (n,): [(score, exp(score), exp(score) / sum)] as a hand check
    would write it (no max subtraction, so only for small scores)."""
    scores = np.asarray(scores, dtype=np.float64)
    e = np.exp(scores)
    return [(float(s), float(x), float(x / e.sum())) for s, x in zip(scores, e)]
