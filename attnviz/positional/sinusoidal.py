"""Sinusoidal positional encoding (Vaswani et al. 2017) and its fixed-offset linear map, in numpy."""
from __future__ import annotations

import numpy as np

from attnviz.errors import BadInput
from attnviz.units import count_text

MAX_LENGTH = 8192  # longest table the app builds; beyond it the figures become meaningless
MAX_DIM = 4096  # widest d_model the app builds
MAX_CELLS = 4_000_000  # largest table (positions x dimensions), 32 MB in float64


def check_length(n: int, what: str = "The length", limit: int = MAX_LENGTH) -> int:
    """n as an int in 1..limit, else BadInput with a plain message."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise BadInput(f"{what} must be a whole number, got {n!r}.")
    if n < 1:
        raise BadInput(f"{what} must be at least 1, got {n}: there are no positions to encode.")
    if n > limit:
        raise BadInput(f"{what} must be at most {limit:,}, got {n:,}: that table would be too large to show.")
    return int(n)


def check_even_dim(d: int, what: str = "d_model") -> int:
    """d as an even int in 2..MAX_DIM: sines and cosines (and RoPE rotations) come in pairs."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise BadInput(f"{what} must be a whole number, got {d!r}.")
    if d < 2:
        raise BadInput(f"{what} must be at least 2, got {d}.")
    if d % 2:
        raise BadInput(f"{what} must be even, got {d}: the dimensions are used in (sin, cos) pairs, "
                       f"one pair per frequency. Try {d - 1} or {d + 1}.")
    if d > MAX_DIM:
        raise BadInput(f"{what} must be at most {MAX_DIM}, got {d}.")
    return int(d)


def check_base(base: float) -> float:
    if not np.isfinite(base) or base <= 1:
        raise BadInput(f"The base must be a number greater than 1, got {base}; the usual value is 10000.")
    return float(base)


def sinusoidal_frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """(d_model/2,) angular frequencies w_i = base^(-2i/d_model), i = 0 .. d_model/2 - 1."""
    d_model, base = check_even_dim(d_model), check_base(base)
    return base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)


def sinusoidal(max_len: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """(max_len, d_model) float64 table: PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i)."""
    max_len = check_length(max_len, "The maximum length")
    w = sinusoidal_frequencies(d_model, base)
    if max_len * d_model > MAX_CELLS:
        raise BadInput(f"{max_len:,} positions x {d_model:,} dimensions is {max_len * d_model:,} numbers; "
                       f"the limit is {MAX_CELLS:,}. Make the length or d_model smaller.")
    angles = np.arange(max_len, dtype=np.float64)[:, None] * w[None, :]  # (max_len, d_model/2)
    pe = np.empty((max_len, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """(d_model, d_model) block-diagonal M_k with PE(p + k) = M_k @ PE(p) for every p.

    Each (sin, cos) pair is rotated by the angle k w_i: sin(a + b) = sin a cos b + cos a sin b,
    cos(a + b) = cos a cos b - sin a sin b. M_k does not depend on p.
    """
    w = sinusoidal_frequencies(d_model, base)
    m = np.zeros((d_model, d_model), dtype=np.float64)
    c, s = np.cos(k * w), np.sin(k * w)
    idx = np.arange(0, d_model, 2)
    m[idx, idx], m[idx, idx + 1] = c, s  # new sin = sin*cos(kw) + cos*sin(kw)
    m[idx + 1, idx], m[idx + 1, idx + 1] = -s, c  # new cos = cos*cos(kw) - sin*sin(kw)
    return m


def shift_prediction(table: np.ndarray, pos: int, k: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """M_k (d_model, d_model), the table's PE(pos + k) (d_model,) and M_k @ PE(pos) (d_model,).

    table: (max_len, d_model) sinusoidal table built with `base`; pos + k must be a row of it.
    The last two agree to rounding: shifting by k is one fixed linear map.
    """
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2:
        raise BadInput(f"Expected a (positions, d_model) table, got shape {table.shape}.")
    if pos < 0 or k < 0 or pos + k >= table.shape[0]:
        raise BadInput(f"pos + k = {pos + k} is past the table ({count_text(table.shape[0])} positions). Lower pos or k.")
    m_k = shift_matrix(k, table.shape[1], base)
    return m_k, table[pos + k], m_k @ table[pos]


def shift_property_error(pe: np.ndarray, k: int, base: float = 10000.0) -> float:
    """max |PE(p + k) - M_k PE(p)| over all p with p + k in the table. pe: (max_len, d_model)."""
    pe = np.asarray(pe, dtype=np.float64)
    if pe.ndim != 2:
        raise BadInput(f"Expected a (positions, d_model) table, got shape {pe.shape}.")
    if not 0 <= k < pe.shape[0]:
        raise BadInput(f"The offset k must be between 0 and {pe.shape[0] - 1} for a table of {count_text(pe.shape[0])} positions.")
    check_even_dim(pe.shape[1])
    w = sinusoidal_frequencies(pe.shape[1], base)
    c, s = np.cos(k * w), np.sin(k * w)
    sin, cos = pe[: pe.shape[0] - k, 0::2], pe[: pe.shape[0] - k, 1::2]
    predicted = np.empty_like(pe[k:])  # M_k PE(p), applied pair by pair (M_k is block-diagonal)
    predicted[:, 0::2] = sin * c + cos * s
    predicted[:, 1::2] = cos * c - sin * s
    return float(np.max(np.abs(pe[k:] - predicted)))


def cosine_similarity(table: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """(n, n) cosine similarity between the rows of a (n, d) table of position vectors."""
    x = np.asarray(table, dtype=np.float64)
    if x.ndim != 2:
        raise BadInput(f"Expected a (positions, dimensions) table, got shape {x.shape}.")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.maximum(norms, eps)
    return x @ x.T


def offset_profile(sim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and spread of a (n, n) similarity along each diagonal, i.e. per offset q - p >= 0.

    Returns (mean, max - min) per offset 0 .. n-1. A spread of ~0 at every offset means the
    similarity depends on the offset alone (a Toeplitz matrix).
    """
    sim = np.asarray(sim, dtype=np.float64)
    if sim.ndim != 2 or sim.shape[0] != sim.shape[1]:
        raise BadInput(f"Expected a square similarity matrix, got shape {sim.shape}.")
    n = sim.shape[0]
    means, spreads = np.empty(n), np.empty(n)
    for k in range(n):
        d = np.diagonal(sim, offset=k)
        means[k], spreads[k] = d.mean(), d.max() - d.min()
    return means, spreads


def sample_positions(n: int, limit: int = 512) -> tuple[np.ndarray, int]:
    """Every stride-th position of 0 .. n-1, stride = ceil(n / limit): at most `limit` positions.

    Returns (positions (ceil(n / stride),), stride); keeps an (n, n) similarity figure small.
    """
    stride = max(1, int(np.ceil(n / limit)))
    return np.arange(0, n, stride), stride
