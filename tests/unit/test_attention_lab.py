"""attnviz.attention against hand computation and torch's own scaled_dot_product_attention."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.attention import (attention_steps, batch_masks, causal_mask, padding_mask, scaled_dot_product,
                               sdpa_torch, softmax, softmax_jacobian, row_entropy)
from attnviz.errors import BadInput
from attnviz.lab import worked_example as ex


def test_worked_example_to_4_decimals():
    s = attention_steps(ex.Q, ex.K, ex.V)
    np.testing.assert_array_equal(s.scores, [[1, 1, 2], [1, 1, 0], [2, 0, 1]])
    assert s.divisor == 2.0
    np.testing.assert_allclose(s.scaled, [[0.5, 0.5, 1.0], [0.5, 0.5, 0.0], [1.0, 0.0, 0.5]])
    np.testing.assert_allclose(np.round(s.weights, 4), [[0.2741, 0.2741, 0.4519], [0.3837, 0.3837, 0.2327],
                                                       [0.5065, 0.1863, 0.3072]], atol=0)
    np.testing.assert_allclose(np.round(s.output[0], 4), [5.7112, 6.7112, 7.7112, 8.7112], atol=0)
    # by hand: e^.5 / (2 e^.5 + e) for row 1
    assert s.weights[0, 0] == pytest.approx(np.exp(0.5) / (2 * np.exp(0.5) + np.e), abs=1e-12)
    # the seed's printed row is NOT this softmax
    assert np.abs(s.weights[0] - ex.SEED_PRINTED_ROW1).max() > 0.05


@pytest.mark.parametrize("temperature", [1.0, 0.05, 3.0])
def test_matches_torch_sdpa_with_mask_and_temperature(temperature):
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 3, 5, 8)), rng.standard_normal((2, 3, 7, 8)), rng.standard_normal((2, 3, 7, 4))
    mask = rng.random((5, 7)) > 0.3
    mask[:, 0] = True  # no fully masked rows: torch returns NaN for those
    out, w = scaled_dot_product(q, k, v, mask=mask, temperature=temperature)
    ref = F.scaled_dot_product_attention(*(torch.tensor(x) for x in (q, k, v)), attn_mask=torch.tensor(mask),
                                         scale=1 / (np.sqrt(8) * temperature))
    np.testing.assert_allclose(out, ref.numpy(), atol=1e-10)
    assert np.allclose(w.sum(-1), 1)


def test_sdpa_torch_signature_still_matches_torch():
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)
    m = torch.tensor(causal_mask(4))
    out, w = sdpa_torch(q, k, v, mask=m)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)
    assert torch.all(w[..., 0, 1:] == 0)


def test_fully_masked_row_is_zero_not_nan():
    q = np.ones((2, 4))
    mask = np.array([[True, False, True], [False, False, False]])
    out, w = scaled_dot_product(q, np.ones((3, 4)), np.arange(6.0).reshape(3, 2), mask=mask)
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(w[1], 0)
    np.testing.assert_allclose(w[0], [0.5, 0, 0.5])
    ref = F.scaled_dot_product_attention(torch.ones(2, 4, dtype=torch.float64), torch.ones(3, 4, dtype=torch.float64),
                                         torch.arange(6.0, dtype=torch.float64).reshape(3, 2), attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(ref.numpy(), out, atol=1e-6)  # torch 2.13's sdpa also zeroes such rows
    assert torch.isnan(torch.softmax(torch.full((3,), float("-inf")), 0)).all()  # a plain softmax gives NaN


def test_bad_inputs_are_plain():
    with pytest.raises(BadInput, match="same width"):
        attention_steps(np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 2)))
    with pytest.raises(BadInput, match="same number of rows"):
        attention_steps(np.ones((2, 3)), np.ones((2, 3)), np.ones((3, 2)))
    with pytest.raises(BadInput, match="greater than 0"):
        attention_steps(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 2)), temperature=0)
    with pytest.raises(BadInput, match="longer than the padded length"):
        padding_mask([3, 7], 5)


def test_padding_and_causal_masks_by_hand():
    np.testing.assert_array_equal(padding_mask([5, 3, 0], 5).astype(int),
                                  [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    m = batch_masks([3, 2], 3)
    np.testing.assert_array_equal(m[0].astype(int), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    np.testing.assert_array_equal(m[1].astype(int), [[1, 0, 0], [1, 1, 0], [1, 1, 0]])
    # the seeds' convention: True = masked, combined with OR; ours is its negation
    causal_masked = torch.triu(torch.ones(3, 3), diagonal=1).bool()
    pad_masked = torch.arange(3)[None, :] >= torch.tensor([3, 2])[:, None]
    np.testing.assert_array_equal(m, ~(causal_masked[None] | pad_masked[:, None, :]).numpy())


def test_softmax_jacobian_and_entropy():
    s = torch.tensor([0.3, -1.0, 2.0, 0.5], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda x: torch.softmax(x, 0), s).numpy()
    np.testing.assert_allclose(softmax_jacobian(softmax(s.numpy())), jac, atol=1e-12)
    assert row_entropy(np.full(8, 1 / 8)) == pytest.approx(np.log(8))
    assert row_entropy(np.eye(3)[0]) == pytest.approx(0, abs=1e-9)


def test_total_variation_by_hand():
    from attnviz.attention import total_variation

    a = np.array([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    b = np.array([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(total_variation(a, b), [0.25, 1.0])  # |0|+|.25|+|.25| / 2; disjoint rows
    np.testing.assert_allclose(total_variation(a, a), [0.0, 0.0])


def test_allowed_keys_is_the_causal_mask_when_causal():
    from attnviz.attention import allowed_keys, causal_mask

    np.testing.assert_array_equal(allowed_keys(4, True), causal_mask(4))
    assert allowed_keys(3, False).all()
