"""Rollout: row sums, identity, a 3-token case by hand, and an independent loop implementation."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.metrics.rollout import contributions, discard_lowest, fuse_heads, mixing_matrices, rollout


def _random_attention(rng, n_layers=3, n_heads=4, n=6):
    x = rng.random((n_layers, n_heads, n, n)).astype(np.float32) ** 3
    return x / x.sum(axis=-1, keepdims=True)


def _straightforward(att, residual):
    """Rollout with explicit loops and plain Python sums (no matmul, no broadcasting)."""
    n_layers, n_heads, n, _ = att.shape
    result = None
    for layer in range(n_layers):
        m = [[0.0] * n for _ in range(n)]
        for i in range(n):
            for j in range(n):
                fused = sum(float(att[layer, h, i, j]) for h in range(n_heads)) / n_heads
                m[i][j] = (1 - residual) * fused + (residual if i == j else 0.0)
            total = sum(m[i])
            m[i] = [v / total for v in m[i]]
        if result is None:
            result = m
        else:
            result = [[sum(m[i][k] * result[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    return np.array(result)


def test_rows_sum_to_one():
    rng = np.random.default_rng(0)
    att = _random_attention(rng, n=9)
    for fusion in ("mean", "max", "min"):
        for discard in (0.0, 0.5, 0.9):
            r = rollout(att, head_fusion=fusion, residual=0.3, discard_ratio=discard)
            np.testing.assert_allclose(r.sum(axis=-1), 1.0, atol=1e-5)
            # the wrong-axis normalisation would make columns, not rows, sum to 1
            assert not np.allclose(r.sum(axis=-2), 1.0, atol=1e-3)


def test_identity_rolls_out_to_identity():
    att = np.broadcast_to(np.eye(5, dtype=np.float32), (4, 3, 5, 5))
    for residual in (0.0, 0.5, 1.0):
        np.testing.assert_allclose(rollout(att, residual=residual), np.broadcast_to(np.eye(5), (4, 5, 5)), atol=1e-7)


def test_three_tokens_by_hand():
    a = np.array([[1, 0, 0], [0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]], dtype=np.float32)
    att = np.stack([a[None], a[None]])  # 2 layers, 1 head
    r = rollout(att, residual=0.5)
    # M = A/2 + I/2 = [[1, 0, 0], [1/4, 3/4, 0], [1/6, 1/6, 2/3]]
    np.testing.assert_allclose(r[0], [[1, 0, 0], [0.25, 0.75, 0], [1 / 6, 1 / 6, 2 / 3]], atol=1e-6)
    # M @ M, row 2: 1/6 [1,0,0] + 1/6 [1/4,3/4,0] + 2/3 [1/6,1/6,2/3] = [23, 17, 32] / 72
    np.testing.assert_allclose(r[1][2], np.array([23, 17, 32]) / 72, atol=1e-6)
    np.testing.assert_allclose(r[1][1], [0.25 + 0.1875, 0.5625, 0], atol=1e-6)


def test_matches_independent_implementation():
    rng = np.random.default_rng(1)
    att = _random_attention(rng, n_layers=4, n_heads=3, n=5)
    for residual in (0.5, 0.2):
        np.testing.assert_allclose(rollout(att, residual=residual)[-1], _straightforward(att, residual), atol=1e-5)


def test_discard_keeps_cls_column_and_drops_the_right_count():
    rng = np.random.default_rng(2)
    fused = rng.random((6, 6)).astype(np.float32)
    fused[:, 0] = 1e-6  # the weakest weights of all sit in the [CLS] column
    out = discard_lowest(fused, 0.5)
    np.testing.assert_array_equal(out[:, 0], fused[:, 0])
    dropped = (out == 0) & (fused != 0)
    assert dropped.sum() == 15  # half of the 30 non-[CLS] weights
    kept = ~dropped
    kept[:, 0] = False
    assert fused[dropped].max() <= fused[kept].min()  # the lowest ones went
    np.testing.assert_array_equal(fused, discard_lowest(fused, 0.0))


def test_fusion():
    att = np.array([[[[0.2, 0.8], [0.6, 0.4]], [[0.6, 0.4], [0.2, 0.8]]]], dtype=np.float32)
    np.testing.assert_allclose(fuse_heads(att, "mean")[0], [[0.4, 0.6], [0.4, 0.6]])
    np.testing.assert_allclose(fuse_heads(att, "max")[0], [[0.6, 0.8], [0.6, 0.8]])
    np.testing.assert_allclose(fuse_heads(att, "min")[0], [[0.2, 0.4], [0.2, 0.4]])


def test_bad_input_plain_messages():
    att = np.full((2, 2, 4, 4), 0.25, dtype=np.float32)
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(BadInput, match="discard ratio"):
            rollout(att, discard_ratio=bad)
    r = rollout(att)
    with pytest.raises(BadInput, match="target token"):
        contributions(r, 4)
    with pytest.raises(BadInput, match="target token"):
        contributions(r, -1)
    np.testing.assert_allclose(contributions(r, 3).sum(), 1.0, atol=1e-6)
    with pytest.raises(BadInput):
        fuse_heads(att, "median")


def test_real_model_rollout(minilm):
    from attnviz.extract import extract

    result = extract(minilm, "The cat sat on the mat because it was tired.")
    r = rollout(result.attention)
    assert r.shape == (6, result.seq_len, result.seq_len)
    np.testing.assert_allclose(r.sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(r[-1], _straightforward(result.attention, 0.5), atol=1e-4)


def test_each_layer_keeps_w_of_a_token_unless_max_fusion_overfills_its_rows(minilm):
    """What the rollout page says of M = (1 - w) F + w I, rows rescaled: with F's rows summing to at most 1 (mean or
    min fusion, weights dropped) the rescaling can only raise the diagonal, so every token keeps at least w; max
    fusion's rows sum to more than 1 and the rescaling takes some tokens below w."""
    from attnviz.extract import extract

    attention = extract(minilm, "The cat sat on the mat because it was tired.").attention
    w = 0.65
    for fusion in ("mean", "min"):
        for discard in (0.0, 0.3):
            m = mixing_matrices(fuse_heads(attention, fusion), residual=w, discard_ratio=discard)
            assert np.diagonal(m, axis1=1, axis2=2).min() >= w - 1e-6, (fusion, discard)
    fused = fuse_heads(attention, "max")
    assert fused.sum(axis=-1).min() > 1.0
    m = mixing_matrices(fused, residual=w)
    assert np.diagonal(m, axis1=1, axis2=2).min() < w - 0.05
