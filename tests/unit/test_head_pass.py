"""The analysis's compiled pass over every head and the vectorised log it uses, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from attnviz import compiled
from attnviz.metrics.analysis import head_pass
from attnviz.metrics.entropy import RowEntropy
from attnviz.metrics.rollout import mixing_matrices


def _log(x: np.ndarray) -> np.ndarray:
    nb = compiled.numba()
    from attnviz.vecmath import log_positive


    @nb.njit
    def run(values, out):
        for i in range(values.size):
            out[i] = log_positive(values[i])

    out = np.empty_like(x)
    run(x, out)
    return out


def test_log_is_within_two_units_in_the_last_place_of_float64s():
    x = np.concatenate([np.geomspace(1e-12, 3e38, 100_001), [0.5, 1.0, 2.0, 0.70710677, 0.70710683, 1 + 2**-23]])
    x = x.astype(np.float32)
    got = _log(x).astype(np.float64)
    exact = np.log(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.abs(got - exact).max() / ulp[np.argmax(np.abs(got - exact))] <= 2.0
    assert (np.abs(got - exact) <= 2 * ulp).all()
    assert got[x == 1.0][0] == 0.0


def test_log_of_zero_or_a_negative_number_is_nan():
    assert np.isnan(_log(np.float32([0.0, -1.0, -3e-12]))).all()


@pytest.mark.parametrize("masked", [False, True])
def test_head_pass_matches_numpy_head_by_head(masked):
    rng = np.random.default_rng(3)
    L, H, n = 2, 3, 45  # 45 rows: the last task has 13
    att = rng.random((L, H, n, n)).astype(np.float32) ** 4
    allowed = np.tril(np.ones((n, n), bool)) if masked else None
    if masked:
        att *= allowed
    att /= att.sum(-1, keepdims=True)
    att[0, 1, 5, :3] = 0.0  # zero weights: 0 log(eps) = 0
    row_weight = rng.random(n).astype(np.float32)
    plogp, fused, cols, mix, near = head_pass(att, allowed, row_weight, residual=0.3)
    entropy = RowEntropy(allowed, shape=(n, n))
    expected = np.array([[entropy.plogp(att[l, h]) for h in range(H)] for l in range(L)])
    np.testing.assert_allclose(plogp, expected, rtol=2e-6, atol=1e-7)
    assert (plogp[:, :, 1:] < 0).all()  # row 0 of a causal layer sees one key: 1 log 1 = 0
    np.testing.assert_allclose(fused, att.astype(np.float64).mean(axis=1), rtol=1e-6)
    np.testing.assert_allclose(cols, np.einsum("q,lhqk->lhk", row_weight.astype(np.float64), att), rtol=1e-5)
    # rollout's matrices, written by hand: 0.7 x the head mean + 0.3 on the diagonal, each row divided by its sum
    by_hand = 0.7 * att.astype(np.float64).mean(axis=1) + 0.3 * np.eye(n)
    by_hand /= by_hand.sum(-1, keepdims=True)
    np.testing.assert_allclose(mix, by_hand, rtol=2e-6, atol=1e-8)
    np.testing.assert_allclose(mix, mixing_matrices(fused, residual=0.3), rtol=2e-6, atol=1e-8)
    q = np.arange(n)
    np.testing.assert_array_equal(near[:, 0], att[:, :, q, q])
    np.testing.assert_array_equal(near[:, 1, :, 1:], att[:, :, q[1:], q[1:] - 1])
    np.testing.assert_array_equal(near[:, 2, :, :-1], att[:, :, q[:-1], q[:-1] + 1])
    assert (near[:, 1, :, 0] == 0).all() and (near[:, 2, :, -1] == 0).all()


def test_head_pass_leaves_a_row_of_zeros_undivided_without_residual():
    att = np.full((1, 2, 4, 4), 0.25, np.float32)
    att[0, :, 2] = 0.0  # a query row no head attends from
    _, _, _, mix, _ = head_pass(att, None, np.full(4, 0.25, np.float32), residual=0.0)
    np.testing.assert_array_equal(mix[0, 2], np.zeros(4, np.float32))
    np.testing.assert_allclose(mix[0, [0, 1, 3]], 0.25, rtol=1e-6)
    np.testing.assert_array_equal(mix, mixing_matrices(att.mean(axis=1), residual=0.0))


def test_head_pass_gives_nan_for_a_negative_weight():
    att = np.full((1, 2, 4, 4), 0.25, np.float32)
    att[0, 1, 2, 3] = -0.1
    plogp, _, _, _, _ = head_pass(att, None, np.full(4, 0.25, np.float32))
    assert np.isnan(plogp[0, 1, 2]) and np.isfinite(np.delete(plogp.ravel(), 1 * 4 + 2)).all()


def test_head_pass_sums_only_the_columns_asked_for():
    rng = np.random.default_rng(5)
    att = rng.random((2, 3, 40, 40)).astype(np.float32)
    att /= att.sum(-1, keepdims=True)
    row_weight = rng.random(40).astype(np.float32)
    columns = np.array([0, 7, 39])
    _, _, cols, _, _ = head_pass(att, None, row_weight, columns)
    full = np.einsum("q,lhqk->lhk", row_weight.astype(np.float64), att)
    np.testing.assert_allclose(cols[..., columns], full[..., columns], rtol=1e-5)
    assert (np.delete(cols, columns, axis=-1) == 0).all()
