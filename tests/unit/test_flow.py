"""Attention flow: hand-computed one- and two-layer cases, an independent max-flow implementation, bad input."""
from collections import deque

import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.metrics.flow import MAX_FLOW_TOKENS, attention_flow, flow_shares
from attnviz.metrics.rollout import mixing_matrices


def _random_mixes(rng, layers, n):
    fused = rng.random((layers, n, n)).astype(np.float32) ** 3  # uneven weights, so paths differ
    fused /= fused.sum(axis=-1, keepdims=True)
    return mixing_matrices(fused, residual=0.5)


def _edmonds_karp(cap: np.ndarray, s: int, t: int) -> float:
    """Plain Edmonds-Karp on a dense capacity matrix (shortest augmenting paths by BFS)."""
    cap = cap.astype(np.float64).copy()
    total = 0.0
    while True:
        parent = {s: None}
        queue = deque([s])
        while queue and t not in parent:
            u = queue.popleft()
            for v in np.flatnonzero(cap[u] > 1e-15):
                if v not in parent:
                    parent[int(v)] = u
                    queue.append(int(v))
        if t not in parent:
            return total
        path, v = [], t
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        push = min(cap[u, v] for u, v in path)
        for u, v in path:
            cap[u, v] -= push
            cap[v, u] += push
        total += push


def _dense_graph(mixes, upto):
    """Capacity matrix of the layered graph: node l * n + i = token i after l layers."""
    n = mixes.shape[-1]
    cap = np.zeros(((upto + 2) * n, (upto + 2) * n))
    for l in range(upto + 1):
        cap[(l + 1) * n:(l + 2) * n, l * n:(l + 1) * n] = mixes[l]
    return cap


def test_one_layer_flow_is_the_edge_weight():
    mixes = _random_mixes(np.random.default_rng(0), 1, 5)
    flows = attention_flow(mixes, range(5), layer=0)
    np.testing.assert_allclose(flows, mixes[0], rtol=1e-6, atol=1e-9)


def test_two_layer_flow_sums_the_bottleneck_of_each_middle_token():
    """From output i to input j every path passes one middle token k, over its own two edges:
    the max flow is sum_k min(M1[i, k], M0[k, j])."""
    mixes = _random_mixes(np.random.default_rng(1), 2, 6)
    flows = attention_flow(mixes, range(6), layer=1)
    by_hand = np.minimum(mixes[1][:, :, None], mixes[0][None, :, :]).sum(axis=1)
    np.testing.assert_allclose(flows, by_hand, rtol=1e-6, atol=1e-9)


def test_deeper_flow_matches_an_independent_max_flow():
    mixes = _random_mixes(np.random.default_rng(2), 4, 6)
    n, layer = 6, 3
    flows = attention_flow(mixes, [0, 4], layer=layer)
    cap = _dense_graph(mixes, layer)
    for k, target in enumerate([0, 4]):
        expected = [_edmonds_karp(cap, (layer + 1) * n + target, j) for j in range(n)]
        np.testing.assert_allclose(flows[k], expected, rtol=1e-6, atol=1e-9)
    # an earlier layer uses only the first matrices
    np.testing.assert_allclose(attention_flow(mixes, [2], layer=0)[0], mixes[0][2], rtol=1e-6)


def test_identity_layers_carry_each_token_to_itself_and_shares_sum_to_one():
    eye = np.repeat(np.eye(4, dtype=np.float32)[None], 3, axis=0)
    np.testing.assert_allclose(attention_flow(eye, range(4)), np.eye(4))
    shares = flow_shares(attention_flow(_random_mixes(np.random.default_rng(3), 3, 7), range(7)))
    np.testing.assert_allclose(shares.sum(axis=1), 1.0, rtol=1e-9)
    assert (shares >= 0).all()


def test_flow_never_exceeds_one_and_progress_is_reported():
    seen = []
    flows = attention_flow(_random_mixes(np.random.default_rng(4), 3, 8), [0, 3, 7], progress=seen.append)
    assert flows.max() <= 1 + 1e-6 and flows.min() > 0
    assert seen == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_bad_input_gives_plain_messages():
    mixes = _random_mixes(np.random.default_rng(5), 2, 4)
    with pytest.raises(BadInput, match="at most 24 tokens; this one has 25"):
        attention_flow(_random_mixes(np.random.default_rng(6), 1, MAX_FLOW_TOKENS + 1), [0])
    with pytest.raises(BadInput, match="target token must be a position from 0 to 3"):
        attention_flow(mixes, [4])
    with pytest.raises(BadInput, match="layer must be from 0 to 1"):
        attention_flow(mixes, [0], layer=2)
    with pytest.raises(BadInput, match="must be"):
        attention_flow(mixes[0], [0])
