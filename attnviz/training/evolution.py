"""Pure functions over attention snapshots: per-head entropy over time, settling steps, diagonal mass."""
from __future__ import annotations

import numpy as np

from attnviz.attention import total_variation
from attnviz.errors import BadInput

EPS = 1e-12


def head_entropy(frames: np.ndarray) -> np.ndarray:
    """Mean row entropy (nats) per frame, layer and head.

    frames: (frame, layer, head, query, key), rows summing to 1 (all-zero rows count as 0).
    Returns (frame, layer, head).
    """
    a = np.asarray(frames, dtype=np.float64)
    if a.ndim != 5:
        raise BadInput(f"Snapshots must be (frame, layer, head, query, key); got {a.ndim} axes.")
    row = -(a * np.log(a + EPS)).sum(axis=-1)  # (F, L, H, Q)
    return row.mean(axis=-1)


def frame_distance(frames: np.ndarray, reference: np.ndarray | None = None) -> np.ndarray:
    """Mean total-variation distance per frame, layer and head to a reference map.

    frames: (frame, layer, head, query, key); reference: (layer, head, query, key),
    default the last frame. Returns (frame, layer, head) in [0, 1].
    """
    a = np.asarray(frames, dtype=np.float64)
    if a.ndim != 5:
        raise BadInput(f"Snapshots must be (frame, layer, head, query, key); got {a.ndim} axes.")
    ref = a[-1] if reference is None else np.asarray(reference, dtype=np.float64)
    if ref.shape != a.shape[1:]:
        raise BadInput(f"The reference map {ref.shape} does not match the snapshots {a.shape[1:]}.")
    return total_variation(a, ref[None]).mean(axis=-1)


def settle_frames(frames: np.ndarray, tol: float = 0.1) -> np.ndarray:
    """Per layer and head, the first frame from which the map stays within `tol` of its
    final form (mean total-variation distance to the last frame). Returns int (layer, head).

    frames: (frame, layer, head, query, key); tol in (0, 1].
    """
    if not 0 < tol <= 1:
        raise BadInput("The settling tolerance must lie between 0 and 1.")
    d = frame_distance(frames)  # (F, L, H)
    far = d > tol
    # last frame that is still far away; settled from the one after it
    any_far = far.any(axis=0)
    last_far = far.shape[0] - 1 - np.argmax(far[::-1], axis=0)
    return np.where(any_far, last_far + 1, 0).astype(np.int64)


def antidiagonal_mass(weights: np.ndarray) -> float:
    """Share of attention on the anti-diagonal (query i -> key n-1-i) of square maps.

    weights: (..., n, n) with rows summing to 1; averaged over everything but the map.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim < 2 or w.shape[-1] != w.shape[-2]:
        raise BadInput(f"The anti-diagonal needs square maps; got shape {w.shape}.")
    flipped = w[..., ::-1]  # query i, key n-1-i moves to the main diagonal
    return float(np.diagonal(flipped, axis1=-2, axis2=-1).mean())  # mean over rows of the mass there
