"""The summaries computed inside the recording forward (each layer's weights once, for its summaries
and, in place of SDPA, for its output) equal a plain SDPA recording followed by the separate summaries pass."""
import numpy as np
import pytest

from attnviz.progress import Cancelled
from attnviz.examples import long_text
from attnviz.long.record import record, record_with_summaries
from attnviz.long.summaries import summarise
from tests.unit.test_long import llama, mistral  # noqa: F401  (fixtures)

TEXT = long_text(2000)


def _same(loaded, n, tiles=48, rows=None):
    plain = record(loaded, TEXT, max_tokens=n)
    ref = summarise(plain, tiles=tiles)
    la, s = record_with_summaries(loaded, TEXT, max_tokens=n, tiles=tiles, **({} if rows is None else {"rows": rows}))
    # the layers after the first ran on outputs computed by the fused pass: their q and k match SDPA's run
    np.testing.assert_allclose(la.query, plain.query, atol=2e-5)
    np.testing.assert_allclose(la.key, plain.key, atol=2e-5)
    for name in ("nats", "normalised", "head_nats", "head_normalised", "sink", "mean_distance"):
        np.testing.assert_allclose(getattr(s, name), getattr(ref, name), atol=5e-5, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(s.distance_weight, ref.distance_weight, atol=5e-5, rtol=1e-5)
    assert (s.distance_count == ref.distance_count).all()
    np.testing.assert_allclose(s.roles.scores, ref.roles.scores, atol=5e-5, equal_nan=True)
    np.testing.assert_allclose(s.pooled.mean, ref.pooled.mean, atol=1e-6)
    np.testing.assert_allclose(s.pooled.max, ref.pooled.max, atol=2e-5)
    return la, s


@pytest.mark.parametrize("n", [16, 512])
def test_fused_pass_equals_sdpa_then_summaries_on_a_gqa_llama(llama, n):
    _same(llama, n)


def test_fused_pass_in_parts_of_tile_rows_equals_sdpa_then_summaries(llama, mistral):
    """Blocks of 4 rows inside tile rows of 10-11 (512 tokens, 48 tiles) add up in their tiles, as blocks of 128
    rows do inside the tile rows of 256 of a 16,384-token input."""
    _same(llama, 512, rows=4)
    _same(mistral, 300, tiles=20, rows=4)  # sliding window, tile rows of 15


def test_fused_pass_equals_sdpa_then_summaries_with_a_sliding_window(mistral):
    la, _ = _same(mistral, 300)
    assert (la.sliding_window == 7).all()


def test_fused_pass_equals_sdpa_then_summaries_on_a_bidirectional_encoder(minilm):
    la, s = _same(minilm, 512)
    assert not la.causal.any() and not np.isnan(s.roles["next"]).any()


def test_fused_pass_reports_each_layer_and_can_be_cancelled(llama):
    seen = []
    record_with_summaries(llama, TEXT, max_tokens=100, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)]
    calls = []
    with pytest.raises(Cancelled, match="cancelled"):
        record_with_summaries(llama, TEXT, max_tokens=600, cancelled=lambda: calls.append(1) or len(calls) > 2)
    la, _ = record_with_summaries(llama, TEXT, max_tokens=100)  # the model is usable after a cancelled pass
    assert la.seq_len == 100


@pytest.mark.parametrize("heads, split", [(3, 1), (3, 3), (9, None)])  # tile rows cut into chunks that add up
def test_row_softmax_and_reductions_match_torch_on_a_causal_block(heads, split):
    """rowpass.softmax_block against torch's softmax and plain passes: rows 40..71 over keys 8..71 of a causal
    layer, two tile rows (16 + 16 rows), a padding row that the distance sums skip, scores from -60 to 60."""
    import torch

    from attnviz.long.rowpass import softmax_block

    q0, k0, B = 40, 8, 32
    K = q0 + B - k0
    g = torch.Generator().manual_seed(heads)
    s = torch.randn(heads, B, K, generator=g) * 20
    rows, keys = q0 + torch.arange(B)[:, None], k0 + torch.arange(K)[None, :]
    s[:, keys.expand(B, K) > rows.expand(B, K)] = -1e30
    expected = torch.softmax(s.double(), -1)
    expected = torch.where(expected < 1.1754944e-38, 0, expected)
    w = torch.full_like(s, float("nan"))
    tiles = np.repeat([0, 1], 16)
    counted = np.ones(B, bool)
    counted[5] = False
    nats, sums, maxes, dist = softmax_block(s, w, tiles, counted, q0 - k0, split)
    # the weights: within float32's rounding of the exact ones (s - max s rounds to half a unit of its own size,
    # which exp turns into that relative error), exactly 0 on hidden keys and where it underflows
    x = (s - s.amax(-1, keepdim=True)).double().abs()
    assert ((w.double() - expected).abs() <= expected * (3e-7 + 6e-8 * x)).all()
    assert (w[:, keys.expand(B, K) > rows.expand(B, K)] == 0).all()
    expected_nats = -(expected * torch.log(expected.clamp_min(1e-300))).sum(-1)
    np.testing.assert_allclose(nats, expected_nats.numpy(), atol=2e-6)
    w = w.double()
    for t in (0, 1):
        np.testing.assert_allclose(sums[:, t], w[:, 16 * t:16 * (t + 1)].sum(1).numpy(), atol=1e-6)
        np.testing.assert_array_equal(maxes[:, t], w[:, 16 * t:16 * (t + 1)].amax(1).float().numpy())
    by_distance = np.zeros((heads, q0 + B - k0))
    for r in np.flatnonzero(counted):
        for j in range(K):
            d = q0 + r - (k0 + j)
            if d >= 0:
                by_distance[:, d] += w[:, r, j].numpy()
    np.testing.assert_allclose(dist, by_distance, atol=1e-6)
    # a layer that is not causal: no distance sums, the rest the same
    nats2, sums2, _, none = softmax_block(s, torch.empty_like(s), tiles, None, q0 - k0, split)
    assert none is None
    np.testing.assert_array_equal(nats2, nats)
    np.testing.assert_array_equal(sums2, sums)


def test_softmax_exponential_is_within_a_few_units_in_the_last_place():
    """rowpass's vectorised exp against float64 on a million points over [-87.3, 0], and 0 below (the smallest
    normal float32 is e^-87.34)."""
    import torch

    from attnviz.long.rowpass import softmax_block

    x = np.concatenate([-np.linspace(0, 87.33, 1 << 20), [-87.5, -200.0, -1e30]]).astype(np.float32)
    # one row (0, x) for each x: its second weight is e^x / (1 + e^x), computed in float64 from the same x
    s = torch.from_numpy(np.stack([np.zeros_like(x), x], axis=-1))[None]  # (1, rows, 2)
    w = torch.empty_like(s)
    softmax_block(s, w, np.zeros(len(x), np.int64), None, 0)
    exact = np.exp(x.astype(np.float64)) / (1 + np.exp(x.astype(np.float64)))
    got = w[0, :, 1].double().numpy()
    normal = exact >= 1.1754944e-38
    assert normal[:-3].all() and not normal[-3:].any()
    np.testing.assert_array_equal(got[~normal], 0)
    np.testing.assert_allclose(got[normal], exact[normal], rtol=4e-7)  # torch: 2e-7
