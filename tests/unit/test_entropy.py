"""Entropy: hand-computed values, masks, padding rows, and an independent float64 implementation."""
import math

import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.attention import allowed_keys
from attnviz.metrics.entropy import head_entropy, head_mean, padding_positions, row_entropy


def test_uniform_row_has_entropy_log_n():
    n = 7
    att = np.full((1, 1, n, n), 1 / n, dtype=np.float32)
    nats, norm = row_entropy(att)
    assert nats.shape == (1, 1, n)
    np.testing.assert_allclose(nats, math.log(7), rtol=1e-5)
    np.testing.assert_allclose(norm, 1.0, rtol=1e-5)


def test_one_hot_row_has_zero_entropy():
    att = np.eye(5, dtype=np.float32)
    nats, norm = row_entropy(att)
    np.testing.assert_allclose(nats, 0.0, atol=1e-6)
    np.testing.assert_allclose(norm, 0.0, atol=1e-6)


def test_hand_computed_row():
    # [1/2, 1/4, 1/4, 0]: H = 1/2 ln 2 + 2 * 1/4 ln 4 = 1.5 ln 2 = 1.03972 nats; / ln 4 = 0.75
    att = np.array([[0.5, 0.25, 0.25, 0.0]] * 4, dtype=np.float32)
    nats, norm = row_entropy(att)
    np.testing.assert_allclose(nats, 1.0397208, rtol=1e-5)
    np.testing.assert_allclose(norm, 0.75, rtol=1e-5)


def test_causal_rows_normalised_by_their_own_key_count():
    n = 5
    att = np.tril(np.ones((n, n), dtype=np.float32))
    att /= att.sum(axis=1, keepdims=True)  # row i uniform over keys 0..i
    nats, norm = row_entropy(att, allowed_keys(n, causal=True))
    np.testing.assert_allclose(nats, [0, math.log(2), math.log(3), math.log(4), math.log(5)], rtol=1e-5, atol=1e-6)
    # row 0 sees a single key: normalised 0 (not 0/0); the others are uniform: 1
    np.testing.assert_allclose(norm, [0, 1, 1, 1, 1], atol=1e-5)
    assert np.isfinite(norm).all()


def test_disallowed_keys_are_ignored():
    # row 1 of a causal 2x2 mask only sees keys 0 and 1; weight on key 2 is ignored
    att = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]], dtype=np.float32)
    allowed = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 0]], dtype=bool)
    nats, norm = row_entropy(att, allowed)
    expected_row2 = -(0.2 * math.log(0.2) + 0.3 * math.log(0.3))
    np.testing.assert_allclose(nats, [0, math.log(2), expected_row2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norm[2], expected_row2 / math.log(2), rtol=1e-5)


def test_padding_rows_left_out_of_head_means():
    tokens = ("[CLS]", "a", "[SEP]", "[PAD]")
    special = np.array([True, False, True, True])
    pad = padding_positions(tokens, special)
    assert pad.tolist() == [False, False, False, True]
    per_row = np.array([[0.2, 0.4, 0.6, 100.0]])
    np.testing.assert_allclose(head_mean(per_row, ~pad), [0.4])


def test_input_not_mutated_and_bad_input():
    att = np.full((2, 2, 3, 3), 1 / 3, dtype=np.float32)
    before = att.copy()
    row_entropy(att)
    np.testing.assert_array_equal(att, before)
    with pytest.raises(BadInput):
        row_entropy(np.array([1.0, 2.0]))
    with pytest.raises(BadInput):
        row_entropy(np.array([[1.5, -0.5], [0.5, 0.5]], dtype=np.float32))
    with pytest.raises(BadInput):
        row_entropy(att, np.ones((2, 2), dtype=bool))


def test_real_model_matches_straightforward_float64(minilm):
    from attnviz.extract import extract

    result = extract(minilm, "The keys to the cabinet are on the table.")
    ent = head_entropy(result)
    p = result.attention.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=-1)
    np.testing.assert_allclose(ent["nats"], ref, atol=2e-4)
    np.testing.assert_allclose(ent["head_nats"], ref.mean(axis=-1), atol=2e-4)
    np.testing.assert_allclose(ent["head_normalised"], ref.mean(axis=-1) / math.log(result.seq_len), atol=2e-4)
    assert ent["head_normalised"].shape == (6, 12)
    # real heads differ: some are focused, some broad
    assert ent["head_normalised"].min() < 0.3 < 0.6 < ent["head_normalised"].max()
