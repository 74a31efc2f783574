"""The numbers the Contributions page and the "not explanation" lesson show, from one result and
its Contributions: what each token receives, where one output token's information comes from, and
how much each layer mixes."""
from __future__ import annotations

import numpy as np

from attnviz.contrib.decompose import Contributions, alti_rollout, rows_normalised, value_rollout
from attnviz.metrics.rollout import rollout


def received(attention: np.ndarray, c: Contributions, layer: int, head: int) -> dict[str, np.ndarray]:
    """Per key token, the mean over query rows of what head (layer, head) gives it: the weight,
    and the value-weighted share (each row rescaled to sum to 1, like the weights)."""
    return {
        "attention weight": attention[layer, head].mean(axis=0),
        "value-weighted share": rows_normalised(c.value_weighted_head(layer, head)).mean(axis=0),
    }


def sources(attention: np.ndarray, c: Contributions, layer: int, query: int) -> dict[str, np.ndarray]:
    """Where output token `query` of one layer takes its information from, three ways (each sums to 1)."""
    return {
        "weights (mean of heads)": attention[layer].mean(axis=0)[query],
        "value-weighted (heads summed)": rows_normalised(c.value_layer[layer])[query],
        "ALTI (residual and norm in)": c.alti[layer, query],
    }


def rolled_sources(attention: np.ndarray, c: Contributions, query: int) -> dict[str, np.ndarray]:
    """Token `query`'s sources after the last layer, three rollouts (each sums to 1)."""
    return {
        "attention rollout (w = 0.5)": rollout(attention)[-1, query],
        "value-weighted rollout": value_rollout(c)[-1, query],
        "ALTI rollout": alti_rollout(c)[-1, query],
    }


def mixing_by_layer(c: Contributions, valid: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Mean mixing ratio per layer over the `valid` tokens (all when None), per kind: (layer,)."""
    keep = slice(None) if valid is None else np.asarray(valid, dtype=bool)
    return {name: r[:, keep].mean(axis=1) for name, r in c.mixing.items()}


def stripe(attention: np.ndarray, c: Contributions, token: int) -> tuple[np.ndarray, np.ndarray]:
    """(weight share, value-weighted share) that every (layer, head) gives token `token`, averaged
    over the query rows: a [SEP] or first-token stripe is large in the first and small in the second."""
    w = attention[:, :, :, token].mean(axis=-1)
    v = rows_normalised(c.value_weighted)[:, :, :, token].mean(axis=-1)
    return w, v
