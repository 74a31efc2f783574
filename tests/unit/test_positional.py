"""Positional encodings: sinusoidal, RoPE, ALiBi and the equivariance demo against hand values
and independent implementations."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attnviz import positional as pe
from attnviz.errors import BadInput


# ---------------------------------------------------------------- sinusoidal
def test_sinusoidal_values_against_the_formula():
    t = pe.sinusoidal(10, 4, 10000.0)
    assert t.shape == (10, 4)
    assert np.allclose(t[0], [0, 1, 0, 1])  # sin 0, cos 0 in every pair
    # pair 0: w_0 = 1; pair 1: w_1 = 10000^(-2/4) = 0.01
    assert t[1, 0] == pytest.approx(0.8414709848078965)  # sin(1)
    assert t[1, 1] == pytest.approx(0.5403023058681398)  # cos(1)
    assert t[2, 2] == pytest.approx(0.019998666693333080)  # sin(0.02)
    assert t[2, 3] == pytest.approx(0.99980000666657776)  # cos(0.02)
    assert t[7, 3] == pytest.approx(math.cos(0.07))


def test_sinusoidal_base_changes_the_frequencies():
    w = pe.sinusoidal_frequencies(8, base=100.0)
    assert np.allclose(w, [1, 100 ** -0.25, 100 ** -0.5, 100 ** -0.75])


def test_shift_is_a_fixed_linear_map():
    t = pe.sinusoidal(200, 64)
    for k in (1, 5, 37, 150):
        assert pe.shift_property_error(t, k) < 1e-12
    # d_model = 2, by hand: the map is a rotation by k radians
    k, p = 2, 3
    m = np.array([[math.cos(k), math.sin(k)], [-math.sin(k), math.cos(k)]])
    assert np.allclose(m @ [math.sin(p), math.cos(p)], [math.sin(p + k), math.cos(p + k)])
    assert np.allclose(pe.shift_matrix(k, 2), m)
    # the map does not depend on p, and differs per k
    assert not np.allclose(pe.shift_matrix(3, 64), pe.shift_matrix(4, 64))


def test_similarity_depends_on_offset_only():
    t = pe.sinusoidal(100, 32)
    dots = t @ t.T
    w = pe.sinusoidal_frequencies(32)
    # PE(p) . PE(p + k) = sum_i cos(k w_i), for every p
    for k in (0, 3, 50):
        expected = np.sum(np.cos(k * w))
        assert np.allclose(np.diagonal(dots, offset=k), expected)
    means, spreads = pe.offset_profile(pe.cosine_similarity(t))
    assert spreads.max() < 1e-12
    assert means[0] == pytest.approx(1.0)


@pytest.mark.parametrize("args, words", [
    ((10, 7), "even"), ((0, 8), "at least 1"), ((100_000, 8), "at most"), ((4000, 4000), "limit"),
    ((10, 0), "at least 2"), ((10.5, 8), "whole number"),
])
def test_sinusoidal_bad_input(args, words):
    with pytest.raises(BadInput, match=words):
        pe.sinusoidal(*args)


def test_base_must_exceed_one():
    with pytest.raises(BadInput, match="greater than 1"):
        pe.sinusoidal(10, 8, base=1.0)


# ---------------------------------------------------------------- RoPE
def test_rope_rotates_a_pair_by_position_times_theta():
    # d_head = 2: theta_0 = 1, so position pi/2 turns (1, 0) into (0, 1)
    out = pe.apply_rope(np.array([[1.0, 0.0]]), [math.pi / 2])
    assert np.allclose(out, [[0.0, 1.0]])
    x = np.random.default_rng(0).standard_normal((5, 8))
    for m in range(5):
        assert np.allclose(pe.apply_rope(x[m:m + 1], [m])[0], pe.rope_matrix(m, 8) @ x[m])
    assert np.allclose(np.linalg.norm(pe.apply_rope(x, range(5)), axis=1), np.linalg.norm(x, axis=1))


def test_rope_matrix_product_is_rotation_by_n_minus_m():
    m, n = 7, 19
    r = pe.rope_matrix(m, 16).T @ pe.rope_matrix(n, 16)
    assert np.allclose(r, pe.rope_matrix(n - m, 16))
    assert not np.allclose(r, pe.rope_matrix(m - n, 16))  # the seeds' R_(m-n) is the wrong way round


def test_rope_relative_property_float64_and_float32_drift():
    e64 = pe.relative_property_error(d_head=64, max_position=4096, n_pairs=300, dtype=np.float64)
    e32 = pe.relative_property_error(d_head=64, max_position=4096, n_pairs=300, dtype=np.float32)
    assert e64["vs_offset_rotation"] < 1e-5 and e64["vs_shifted_pair"] < 1e-5
    assert e32["vs_offset_rotation"] > 1e-5  # float32 rounding of large angles shows
    assert e32["vs_offset_rotation"] > 100 * e64["vs_offset_rotation"]


def test_rope_score_decay_cases():
    d = pe.score_decay(d_head=64, max_distance=512, n_samples=2000)
    assert d["aligned"][0] == pytest.approx(1.0) and d["bound"][0] == pytest.approx(1.0)
    assert d["aligned"][200:].max() < 0.6 and d["bound"][200:].max() < 0.6
    assert np.abs(d["random_mean"]).max() < 0.02  # no decay, just ~0 everywhere
    assert d["random_std"][0] == pytest.approx(1 / 8, rel=0.1)  # std of q.k/d = 1/sqrt(d)
    # d_head = 2 by hand: the aligned score is cos(distance)
    d2 = pe.score_decay(d_head=2, max_distance=10, n_samples=10)
    assert np.allclose(d2["aligned"], np.cos(np.arange(11)))


def test_rope_attention_demo():
    demo = pe.rope_attention_demo(seq_len=12, d_head=16, base=100.0, content="repeated", strength=8.0)
    assert np.allclose(demo["plain"], 1 / 12)
    assert (np.argmax(demo["rope"], axis=1) == np.arange(12)).all()
    scores = demo["q_rope"] @ demo["k_rope"].T
    assert pe.offset_profile(scores)[1].max() < 1e-9 and pe.offset_profile(scores.T)[1].max() < 1e-9
    assert scores[0, 0] / 4 == pytest.approx(8.0)  # strength = q.k / sqrt(16) at distance 0


@pytest.mark.parametrize("d", [7, 1])
def test_rope_odd_dimension_is_refused(d):
    with pytest.raises(BadInput):
        pe.rope_frequencies(d)


# ---------------------------------------------------------------- ALiBi
def _reference_slopes(n):
    """The ALiBi authors' get_slopes, rewritten here as an independent check."""
    def pow2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return pow2(n)
    closest = 2 ** math.floor(math.log2(n))
    return pow2(closest) + _reference_slopes(2 * closest)[0::2][: n - closest]


def test_alibi_slopes_8_and_12_heads():
    assert np.allclose(pe.alibi_slopes(8), [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256])
    expected12 = [2.0 ** -k for k in range(1, 9)] + [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5]
    assert np.allclose(pe.alibi_slopes(12), expected12)
    assert np.allclose(pe.alibi_slopes(6), [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8])
    assert np.allclose(pe.alibi_slopes(1), [1 / 256])


def test_alibi_slopes_match_reference_code():
    for n in range(1, 65):
        assert np.allclose(pe.alibi_slopes(n), _reference_slopes(n)), n


@pytest.mark.parametrize("n", [0, -3, 1000, 2.5])
def test_alibi_bad_head_count(n):
    with pytest.raises(BadInput, match="number of heads"):
        pe.alibi_slopes(n)


def test_alibi_bias_and_effect():
    b = pe.alibi_bias(8, 5, causal=True)
    assert b.shape == (8, 5, 5)
    assert b[0, 3, 1] == -1.0  # slope 1/2, distance 2
    assert b[7, 4, 0] == pytest.approx(-4 / 256)
    assert np.isneginf(b[0, 1, 3]) and b[0, 2, 2] == 0
    sym = pe.alibi_bias(8, 5, causal=False)
    assert sym[0, 1, 3] == -1.0
    plain, biased = pe.alibi_attention(np.zeros((2, 2)), 8, causal=True)
    assert np.allclose(plain, [[1, 0], [0.5, 0.5]])
    e = math.exp(0.5)
    assert np.allclose(biased[0, 1], [1 / (1 + e), e / (1 + e)])  # softmax([-0.5, 0])


# ---------------------------------------------------------------- why positions
def test_equivariance_without_positions():
    rep = pe.permutation_demo("the dog bites the man", "none", perm=[4, 2, 1, 0, 3])
    assert rep.shuffled_tokens == ("man", "bites", "dog", "the", "the")
    assert rep.equivariant
    assert rep.attention_error < 1e-12 and rep.output_error < 1e-12 and rep.pooled_error < 1e-12
    # independent check: permutation matrix P, W' = P W P^T and Y' = P Y
    p = np.eye(5)[[4, 2, 1, 0, 3]]
    assert np.allclose(rep.weights_shuffled, p @ rep.weights @ p.T)
    assert np.allclose(rep.outputs_shuffled, p @ rep.outputs)


@pytest.mark.parametrize("scheme", ["sinusoidal", "rope"])
def test_equivariance_breaks_with_positions(scheme):
    rep = pe.permutation_demo("the dog bites the man", scheme, perm=[4, 2, 1, 0, 3])
    assert not rep.equivariant
    assert rep.attention_error > 1e-3 and rep.output_error > 1e-3


def test_same_sentence_vector_for_reordered_words_without_positions():
    a = pe.permutation_demo("dog bites man", "none", perm=[2, 1, 0])
    assert a.shuffled_tokens == ("man", "bites", "dog") and a.pooled_error < 1e-12
    b = pe.permutation_demo("dog bites man", "sinusoidal", perm=[2, 1, 0])
    assert b.pooled_error > 1e-3


@pytest.mark.parametrize("text, perm, words", [
    ("hello", None, "at least two"), ("", None, "at least two"), ("a b c", [0, 0, 1], "permutation"),
    (" ".join(["w"] * 65), None, "at most"),
])
def test_equivariance_bad_input(text, perm, words):
    with pytest.raises(BadInput, match=words):
        pe.permutation_demo(text, "none", perm=perm)


def test_default_shuffle_moves_something():
    for seed in range(10):
        rep = pe.permutation_demo("a b", "none", seed=seed)
        assert list(rep.perm) == [1, 0]


# ---------------------------------------------------------------- comparison and plots
def test_comparison_table_facts():
    rows = {r["Scheme"]: r for r in pe.comparison_rows()}
    assert "1024" in rows["Learned absolute"]["Used by"] and "2048" not in str(rows)
    assert "R_(n-m)" in rows["RoPE"]["Type"]
    assert "YaRN" in rows["RoPE"]["Extrapolation"] and "(PI)" in rows["RoPE"]["Extrapolation"]
    assert "1/2, 1/4" in rows["ALiBi"]["Parameters"]
    assert "512 x 384 = 196,608" in rows["Learned absolute"]["Parameters"]
    assert 512 * 384 == 196_608 and 1024 * 768 == 786_432 and 512 * 768 == 393_216
    marked = pe.comparison_rows(highlight="rope")
    assert [r["This model"] for r in marked].count("◀") == 1 and marked[3]["This model"] == "◀"


def test_pool_and_figure_size():
    from attnviz.positional import figures as plots

    m = np.arange(12, dtype=float).reshape(3, 4)
    pooled, rows, cols, block = plots.pool(m, 2, 2)
    assert block == (2, 2) and list(rows) == [0, 2] and list(cols) == [0, 2]
    assert np.allclose(pooled, [[(0 + 1 + 4 + 5) / 4, (2 + 3 + 6 + 7) / 4], [(8 + 9) / 2, (10 + 11) / 2]])
    big = np.random.default_rng(0).standard_normal((512, 384))
    fig = plots.table_heatmap(big, title="t", x_title="dimension", y_title="position")
    assert np.asarray(fig.data[0].z).shape == (256, 192)
    assert plots.figure_bytes(fig) < 400_000
    sim = plots.table_heatmap(pe.cosine_similarity(big), title="s", x_title="p", y_title="p")
    assert plots.figure_bytes(sim) < 450_000


# ---------------------------------------------------------------- maths outside the page
def test_shift_prediction_by_hand():
    # d_model = 2: one pair, w_0 = 1 whatever the base; PE(p) = (sin p, cos p)
    table = pe.sinusoidal(10, 2)
    m_k, actual, predicted = pe.shift_prediction(table, pos=1, k=2)
    c, s = math.cos(2), math.sin(2)
    assert np.allclose(m_k, [[c, s], [-s, c]])
    assert np.allclose(actual, [math.sin(3), math.cos(3)])
    assert np.allclose(predicted, [math.sin(3), math.cos(3)], atol=1e-12)
    with pytest.raises(BadInput, match="past the table"):
        pe.shift_prediction(table, pos=8, k=2)


def test_sample_positions_keeps_at_most_the_limit():
    idx, stride = pe.sample_positions(10)
    assert stride == 1 and idx.tolist() == list(range(10))
    idx, stride = pe.sample_positions(1000, limit=512)  # ceil(1000 / 512) = 2
    assert stride == 2 and len(idx) == 500 and idx[:3].tolist() == [0, 2, 4] and idx[-1] == 998
    idx, stride = pe.sample_positions(1025, limit=512)  # ceil(1025 / 512) = 3
    assert stride == 3 and len(idx) == 342 and idx[-1] == 1023


def test_vector_norms_and_longest_positions():
    norms, top = pe.vector_norms(np.array([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]]), top=2)
    assert norms.tolist() == [5.0, 1.0, 10.0]
    assert top.tolist() == [2, 0]


def test_rope_offset_scores_and_position_scores_by_hand():
    # d_head = 2: theta_0 = 1. R_m (1, 0) = (cos m, sin m); R_n (0, 1) = (-sin n, cos n); dot = sin(m - n)
    q, k = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    scores = pe.offset_scores(q, k, m=5, n=12, s=1000)
    assert np.allclose(scores, [math.sin(-7)] * 3, atol=1e-9)
    grid = pe.position_scores(q, k, 4)
    assert grid.shape == (4, 4)
    assert np.allclose(grid, [[math.sin(m - n) for n in range(4)] for m in range(4)])


def test_random_query_key_is_seeded():
    q, k = pe.random_query_key(4, seed=0)
    rng = np.random.default_rng(0)
    assert np.array_equal(q, rng.standard_normal(4)) and np.array_equal(k, rng.standard_normal(4))


def test_alibi_content_scores_and_power_of_two_below():
    assert [pe.power_of_two_below(n) for n in (1, 2, 3, 6, 8, 15, 16)] == [1, 2, 2, 4, 8, 8, 16]
    assert np.array_equal(pe.content_scores(3, 0.0), np.zeros((3, 3)))
    assert np.array_equal(pe.content_scores(3, 2.0, seed=1), 2.0 * np.random.default_rng(1).standard_normal((3, 3)))


def test_weights_permuted_puts_rows_and_columns_in_the_new_order():
    rep = pe.permutation_demo("a b c", "sinusoidal", perm=[2, 0, 1])
    w = rep.weights
    assert rep.weights_permuted[0, 1] == w[2, 0] and rep.weights_permuted[1, 2] == w[0, 1]
    assert rep.weights_permuted[2, 2] == w[1, 1]
    none = pe.permutation_demo("a b c", "none", perm=[2, 0, 1])
    assert np.allclose(none.weights_permuted, none.weights_shuffled, atol=1e-12)


# ---------------------------------------------------------------- one ALiBi slope rule everywhere
def test_toy_model_uses_the_reference_slopes():
    from attnviz.models.scratch import _alibi_slopes

    for n in range(1, 17):
        toy = _alibi_slopes(n)
        assert toy.dtype.is_floating_point and toy.shape == (n,)
        assert np.allclose(toy.numpy(), pe.alibi_slopes(n), rtol=1e-6, atol=0), n
        assert np.allclose(toy.numpy(), _reference_slopes(n), rtol=1e-6, atol=0), n


def test_paper_formula_and_reference_differ_at_six_heads():
    paper = [2.0 ** (-8.0 * h / 6) for h in range(1, 7)]  # 2^(-8h/H), written out here
    reference = [1 / 4, 1 / 16, 1 / 64, 1 / 256, 1 / 2, 1 / 8]  # get_slopes(6): 4-head slopes, then odd 8-head ones
    assert np.allclose(pe.paper_slopes(6), paper)
    assert np.allclose(_reference_slopes(6), reference)
    assert pe.paper_slopes(6)[0] == pytest.approx(2 ** (-4 / 3)) and pe.alibi_slopes(6)[0] == 1 / 4
    assert not np.allclose(pe.paper_slopes(6), pe.alibi_slopes(6))
    # they agree for powers of two, and only for those up to 16 heads
    differ = [n for n in range(1, 17) if not np.allclose(pe.paper_slopes(n), pe.alibi_slopes(n))]
    assert differ == [3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15]
