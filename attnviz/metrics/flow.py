"""Attention flow (Abnar & Zuidema 2020): the maximum flow from an output token down to each input token.

The layers form a graph: one node per token per layer (layer 0 = the input), and an edge from token i
in layer l + 1 to token j in layer l whose capacity is M_l[i, j], the layer's mixing matrix (the same
heads-fused, residual-added, row-normalised matrix rollout multiplies). Rollout sums the products of
the weights along every path; flow asks how much can pass through the graph at once when every edge
can carry at most its weight, so one strong path cannot be counted twice. A maximum flow per
(output, input) pair costs far more than a matrix product: it is offered for short inputs only.
"""
from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import numpy as np

from attnviz.errors import BadInput
from attnviz.units import count_text

MAX_FLOW_TOKENS = 24  # every pair is one max-flow problem on a (layers + 1) x n node graph


def flow_graph(mixes: np.ndarray, upto: int) -> nx.DiGraph:
    """The layered graph of mixes[0..upto] (layer, n, n): node (l, i) = token i after l layers
    ((0, i) = input token i); edge (l + 1, i) -> (l, j) with capacity mixes[l, i, j] where it is > 0."""
    n = mixes.shape[-1]
    g = nx.DiGraph()
    g.add_nodes_from((l, i) for l in range(upto + 2) for i in range(n))
    for layer in range(upto + 1):
        rows, cols = np.nonzero(mixes[layer] > 0)
        g.add_edges_from(((layer + 1, int(i)), (layer, int(j)), {"capacity": float(mixes[layer, i, j])})
                         for i, j in zip(rows, cols))
    return g


def check_flow_size(n: int) -> None:
    if n > MAX_FLOW_TOKENS:
        raise BadInput(f"Attention flow solves one maximum-flow problem per pair of tokens, so it is offered for "
                       f"inputs of at most {count_text(MAX_FLOW_TOKENS)} tokens; this one has {n}. Shorten the text, or "
                       "use rollout, which scales to long inputs.")


def attention_flow(mixes: np.ndarray, targets, layer: int = -1,
                   progress: Callable[[float], None] | None = None) -> np.ndarray:
    """Flow values (len(targets), n): the maximum flow from output token t after `layer` down to
    every input token, through the mixing matrices of layers 0..layer (mixing_matrices()).

    Each value is at most 1 (a row of every mixing matrix sums to 1). progress(fraction) is called
    after each target."""
    mixes = np.asarray(mixes)
    if mixes.ndim != 3 or mixes.shape[1] != mixes.shape[2]:
        raise BadInput(f"mixing matrices must be (layer, n, n), got shape {mixes.shape}")
    n_layers, n = mixes.shape[0], mixes.shape[1]
    check_flow_size(n)
    if not (-n_layers <= layer < n_layers):
        raise BadInput(f"The layer must be from 0 to {n_layers - 1} (it was {layer}).")
    layer %= n_layers
    targets = [int(t) for t in targets]
    if any(not (0 <= t < n) for t in targets):
        raise BadInput(f"The target token must be a position from 0 to {n - 1}.")
    g = flow_graph(mixes, layer)
    top = layer + 1
    out = np.zeros((len(targets), n), dtype=np.float64)
    residual = nx.algorithms.flow.build_residual_network(g, "capacity")
    for k, t in enumerate(targets):
        for j in range(n):
            out[k, j] = nx.maximum_flow_value(g, (top, t), (0, j), flow_func=nx.algorithms.flow.preflow_push,
                                              residual=residual)
        if progress is not None:
            progress((k + 1) / len(targets))
    return out


def flow_shares(flows: np.ndarray) -> np.ndarray:
    """Each output's flow values divided by their sum (as the paper shows them): rows sum to 1."""
    f = np.asarray(flows, dtype=np.float64)
    sums = f.sum(axis=-1, keepdims=True)
    return np.divide(f, sums, out=np.zeros_like(f), where=sums > 0)
