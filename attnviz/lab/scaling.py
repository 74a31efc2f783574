"""Why divide by sqrt(d_k): spread of random dot products and softmax saturation versus d_k."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.attention import row_entropy, softmax, softmax_jacobian
from attnviz.errors import BadInput

D_K_GRID = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)  # dimensions the sweep visits
MAX_D_K = 1024  # largest d_k the lab samples


@dataclass(frozen=True)
class ScalingConfig:
    n_keys: int = 16  # keys each query attends over (softmax width)
    n_trials: int = 400  # random (query, keys) draws per d_k
    seed: int = 0  # random seed, so every run shows the same numbers


@dataclass(frozen=True)
class SaturationRow:
    """Softmax statistics at one d_k, averaged over trials, without and with the 1/sqrt(d_k)."""

    d_k: int
    std_raw: float  # standard deviation of q.k (theory: sqrt(d_k))
    std_scaled: float  # standard deviation of q.k / sqrt(d_k) (theory: 1)
    max_weight_raw: float  # mean largest softmax weight, unscaled scores
    max_weight_scaled: float
    entropy_raw: float  # mean softmax entropy in nats (uniform = log n_keys)
    entropy_scaled: float
    grad_raw: float  # mean Frobenius norm of the softmax Jacobian d p / d s
    grad_scaled: float


def _check_d_k(d_k: int) -> None:
    if not 1 <= int(d_k) <= MAX_D_K:
        raise BadInput(f"d_k must be between 1 and {MAX_D_K}; got {d_k}.")


def dot_products(d_k: int, n: int = 4000, seed: int = 0) -> np.ndarray:
    """(n,) dot products q.k of independent standard-normal q, k in R^d_k (unscaled)."""
    _check_d_k(d_k)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, d_k))
    k = rng.standard_normal((n, d_k))
    return np.einsum("nd,nd->n", q, k)


def saturation_row(d_k: int, cfg: ScalingConfig = ScalingConfig()) -> SaturationRow:
    """Statistics of softmax(q K^T) and softmax(q K^T / sqrt(d_k)) for random q, K at one d_k."""
    _check_d_k(d_k)
    if cfg.n_keys < 2:
        raise BadInput("A softmax needs at least 2 keys to saturate.")
    rng = np.random.default_rng([cfg.seed, d_k])
    q = rng.standard_normal((cfg.n_trials, 1, d_k))
    keys = rng.standard_normal((cfg.n_trials, cfg.n_keys, d_k))
    raw = (q @ np.swapaxes(keys, 1, 2))[:, 0, :]  # (trials, n_keys)
    scaled = raw / np.sqrt(d_k)
    stats = []
    for s in (raw, scaled):
        p = softmax(s, axis=-1)
        grad = np.linalg.norm(softmax_jacobian(p), axis=(-2, -1))
        stats.append((float(p.max(axis=-1).mean()), float(row_entropy(p).mean()), float(grad.mean())))
    (mw_r, h_r, g_r), (mw_s, h_s, g_s) = stats
    return SaturationRow(d_k=int(d_k), std_raw=float(raw.std()), std_scaled=float(scaled.std()),
                         max_weight_raw=mw_r, max_weight_scaled=mw_s, entropy_raw=h_r,
                         entropy_scaled=h_s, grad_raw=g_r, grad_scaled=g_s)


def saturation_sweep(d_ks=D_K_GRID, cfg: ScalingConfig = ScalingConfig()) -> list[SaturationRow]:
    """saturation_row for each d_k (ascending)."""
    return [saturation_row(d, cfg) for d in d_ks]
