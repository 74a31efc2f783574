"""Attention as a soft dictionary lookup: a query scores every key, values are averaged."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.attention import scaled_dot_product
from attnviz.errors import BadInput

# A tiny dictionary. Keys describe each animal by 4 features; the value is a typical
# lifespan in years. The features are invented for the demo, lifespans are rough.
FEATURES = ("big", "pet", "flies", "swims")
ENTRIES = ("cat", "dog", "eagle", "goldfish", "horse", "shark")
KEYS = np.array([
    [0.2, 1.0, 0.0, 0.0],  # cat
    [0.4, 1.0, 0.0, 0.1],  # dog
    [0.3, 0.0, 1.0, 0.0],  # eagle
    [0.0, 1.0, 0.0, 1.0],  # goldfish
    [1.0, 0.6, 0.0, 0.0],  # horse
    [0.8, 0.0, 0.0, 1.0],  # shark
])
VALUES = np.array([15.0, 12.0, 25.0, 7.0, 28.0, 30.0])  # lifespan in years
DEFAULT_QUERY = np.array([-1.0, 1.0, 0.0, -0.5])  # "a small pet that does not swim"


@dataclass(frozen=True)
class Lookup:
    scores: np.ndarray  # (n_entries,) q.k / (sqrt(d_k) T)
    weights: np.ndarray  # (n_entries,) softmax of the scores
    soft_value: float  # weights @ values: what attention returns
    hard_index: int  # argmax of the scores: what an exact dictionary would return
    hard_value: float  # values[hard_index]


def soft_lookup(query, keys=KEYS, values=VALUES, temperature: float = 1.0) -> Lookup:
    """query: (d_k,); keys: (n, d_k); values: (n,). Attention of one query over a dictionary."""
    query = np.asarray(query, dtype=np.float64)
    keys = np.asarray(keys, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if query.shape != (keys.shape[1],):
        raise BadInput(f"The query needs {keys.shape[1]} numbers, one per key feature; got {query.size}.")
    out, w = scaled_dot_product(query[None], keys, values[:, None], temperature=temperature)
    scores = keys @ query / (np.sqrt(keys.shape[1]) * temperature)
    i = int(np.argmax(scores))
    return Lookup(scores=scores, weights=w[0], soft_value=float(out[0, 0]), hard_index=i,
                  hard_value=float(values[i]))


T_MIN, T_MAX = 0.001, 1000.0  # typed temperatures are clamped into this range (the slider spans 0.01-10)


def read_temperature(typed: str) -> tuple[float, str | None]:
    """A typed temperature -> (T to use, a plain note when it was clamped, else None).

    Raises BadInput for text that is not a number, for T <= 0 and for nan. Values outside
    [T_MIN, T_MAX] (1e9, 1e-300, inf) are clamped, so the numbers and the page's log axis stay readable."""
    text = (typed or "").strip()
    shown = text if len(text) <= 40 else text[:40] + "…"
    try:
        t = float(text)
    except ValueError:
        raise BadInput(f"'{shown}' is not a number. Type a temperature such as 0.3 or 5.") from None
    if not t > 0:  # also catches nan
        raise BadInput(f"T must be greater than 0: T = {shown} would divide the scores by zero (or flip their "
                       "order). The limit T → 0 is the hard lookup; try T = 0.01 to see it.")
    if t > T_MAX:
        return T_MAX, (f"T = {shown} is larger than {T_MAX:g}, the largest temperature this page uses, so it shows "
                       f"T = {T_MAX:g} instead.")
    if t < T_MIN:
        return T_MIN, (f"T = {shown} is smaller than {T_MIN:g}, the smallest temperature this page uses, so it "
                       f"shows T = {T_MIN:g} instead.")
    return t, None


def temperature_grid(lo: float = 0.01, hi: float = 10.0, per_decade: int = 10) -> list[float]:
    """Log-spaced temperatures from lo to hi with 2 significant digits (for a slider)."""
    n = int(round(np.log10(hi / lo) * per_decade)) + 1
    return [float(f"{t:.2g}") for t in np.geomspace(lo, hi, n)]


def weights_vs_temperature(scores: np.ndarray, temperatures) -> np.ndarray:
    """scores: (n,) scaled at T = 1 -> (len(temperatures), n) softmax(scores / T)."""
    from attnviz.attention import softmax

    scores = np.asarray(scores, dtype=np.float64)
    t = np.asarray(temperatures, dtype=np.float64)
    if np.any(t <= 0):
        raise BadInput("Every temperature must be greater than 0.")
    return softmax(scores[None, :] / t[:, None], axis=-1)
