"""The attention lab's modules against hand computation and independent torch implementations."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from attnviz.errors import BadInput
from attnviz.lab import kv_cache as kv
from attnviz.lab import lookup as lk
from attnviz.lab import variants as va
from attnviz.lab.masks import future_leak, masked_batch
from attnviz.lab.matrix_text import format_matrix, parse_matrix
from attnviz.lab.mistakes import inverted_padding, rank_collapse, ratio_check, wrong_axis
from attnviz.lab.multihead import head_dim, multi_head_attention, random_params
from attnviz.lab.quiz import QUESTIONS, check, score
from attnviz.lab.scaling import dot_products, saturation_row
from attnviz.units import human_bytes

T = lambda x: torch.tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731


# ---------------------------------------------------------------- matrix text
def test_parse_matrix_and_errors():
    np.testing.assert_array_equal(parse_matrix("1 0 1\n0, 1, 0"), [[1, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(parse_matrix("[[1.5, -2], [3, 4e-1]]"), [[1.5, -2], [3, 0.4]])
    m = np.array([[0.2741, 1.0], [-3.5, 2.0]])
    np.testing.assert_array_equal(parse_matrix(format_matrix(m)), m)
    for text, msg in [("1 2\n3", "ragged: row 2 has 1 number but row 1 has 2"), ("1 x", "row 1, entry 2: 'x'"),
                      ("", "empty"), ("inf 1", "not a finite"), ("\n".join(["1"] * 40), "at most 32")]:
        with pytest.raises(BadInput, match=msg):
            parse_matrix(text, "Q")


# ---------------------------------------------------------------- scaling
def test_dot_product_spread_grows_like_sqrt_dk():
    for d in (4, 64, 1024):
        assert dot_products(d, n=20000).std() == pytest.approx(np.sqrt(d), rel=0.05)
        assert (dot_products(d, n=20000) / np.sqrt(d)).std() == pytest.approx(1.0, rel=0.05)


def test_saturation_without_scaling():
    small, big = saturation_row(4), saturation_row(1024)
    assert big.max_weight_raw > 0.9 and big.max_weight_scaled < 0.35
    assert big.grad_raw < 0.5 * big.grad_scaled
    assert big.entropy_raw < 0.3 < np.log(16) - 0.6 < big.entropy_scaled
    assert abs(small.entropy_scaled - big.entropy_scaled) < 0.15  # scaled stays put across d_k
    with pytest.raises(BadInput):
        saturation_row(2048)


# ---------------------------------------------------------------- temperature / lookup
def test_temperature_limits():
    q = np.array([1.0, 0.0, 0.0, 0.0])
    keys = np.array([[2.0, 0, 0, 0], [1.0, 0, 0, 0], [0.0, 0, 0, 0]])
    vals = np.array([10.0, 20.0, 30.0])
    cold = lk.soft_lookup(q, keys, vals, temperature=0.01)
    assert cold.hard_index == 0 and cold.soft_value == pytest.approx(10.0, abs=1e-6)
    hot = lk.soft_lookup(q, keys, vals, temperature=1e6)
    np.testing.assert_allclose(hot.weights, 1 / 3, atol=1e-6)
    # by hand at T = 1: scores q.k / sqrt(4) = [1, 0.5, 0]
    e = np.exp([1.0, 0.5, 0.0])
    np.testing.assert_allclose(lk.soft_lookup(q, keys, vals).weights, e / e.sum())
    w = lk.weights_vs_temperature(np.array([0.5, 0.5, 0.0]), [0.01])
    np.testing.assert_allclose(w[0], [0.5, 0.5, 0.0], atol=1e-12)  # ties share even at T -> 0
    with pytest.raises(BadInput):
        lk.weights_vs_temperature(np.zeros(3), [0.0])
    grid = lk.temperature_grid()
    assert grid[0] == 0.01 and grid[-1] == 10.0 and 1.0 in grid


# ---------------------------------------------------------------- masks
def test_masked_batch_and_leak():
    b = masked_batch([4, 2, 0], 4)
    assert b.fully_masked_rows == ((2, 0), (2, 1), (2, 2), (2, 3))
    np.testing.assert_allclose(b.weights[:2].sum(-1), 1)
    assert np.all(b.weights[1][:, 2:] == 0) and np.all(np.triu(b.weights[0], 1) == 0)
    assert not np.isnan(b.weights).any()
    with pytest.raises(BadInput, match="longer than the padded length"):
        masked_batch([5, 9], 5)
    leak = future_leak(6)
    np.testing.assert_array_equal(leak.change_with_mask[:-1], 0)
    assert np.all(leak.change_without_mask[:-1] > 1e-3)


# ---------------------------------------------------------------- multi-head
def _torch_mha(p, d_model, n_heads):
    mha = nn.MultiheadAttention(d_model, n_heads, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(T(np.concatenate([p.w_q, p.w_k, p.w_v])))
        mha.in_proj_bias.copy_(T(np.concatenate([p.b_q, p.b_k, p.b_v])))
        mha.out_proj.weight.copy_(T(p.w_o))
        mha.out_proj.bias.copy_(T(p.b_o))
    return mha


@pytest.mark.parametrize("masked", [False, True])
def test_multihead_matches_nn_multiheadattention(masked):
    d_model, h, n = 12, 3, 5
    p = random_params(d_model, h, seed=3)
    x = np.random.default_rng(0).standard_normal((n, d_model))
    y = np.random.default_rng(1).standard_normal((7, d_model))
    allow = np.tril(np.ones((n, 7), dtype=bool)) if masked else None
    ours = multi_head_attention(x, y, p, h, mask=allow)
    ref_out, ref_w = _torch_mha(p, d_model, h)(T(x)[None], T(y)[None], T(y)[None], average_attn_weights=False,
                                               attn_mask=None if allow is None else ~torch.tensor(allow))
    np.testing.assert_allclose(ours.output, ref_out[0].detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(ours.weights, ref_w[0].detach().numpy(), atol=1e-10)
    assert ours.concat.shape == (n, d_model)
    assert p.n_params == 4 * d_model * d_model + 4 * d_model


def test_grouped_query_matches_torch_sdpa_gqa():
    d_model, h, h_kv, n = 16, 4, 2, 6
    p = random_params(d_model, h, h_kv, seed=5, bias=False)
    x = np.random.default_rng(2).standard_normal((n, d_model))
    ours = multi_head_attention(x, x, p, h)
    q = T(x @ p.w_q.T).view(n, h, 4).transpose(0, 1)
    k = T(x @ p.w_k.T).view(n, h_kv, 4).transpose(0, 1)
    v = T(x @ p.w_v.T).view(n, h_kv, 4).transpose(0, 1)
    ref = F.scaled_dot_product_attention(q[None], k[None], v[None], enable_gqa=True)[0]
    np.testing.assert_allclose(ours.head_outputs, ref.numpy(), atol=1e-10)


def test_head_dim_error():
    assert head_dim(512, 8) == 64
    with pytest.raises(BadInput, match="256 is not divisible by n_heads = 6"):
        head_dim(256, 6)


# ---------------------------------------------------------------- Bahdanau / Luong
def test_variants_match_independent_torch():
    s, h = va.DECODER_STATES, va.ENCODER_STATES
    p = va.random_variant_params(3, 3, 2, seed=1)
    S, H = T(s), T(h)
    ref = {
        "bahdanau": (torch.tanh((S @ T(p.w_a).T)[:, None] + (H @ T(p.u_a).T)[None]) @ T(p.v_a)),
        "dot": S @ H.T,
        "general": torch.stack([torch.stack([S[i] @ T(p.w_general) @ H[j] for j in range(4)]) for i in range(3)]),
        "concat": torch.stack([torch.stack([T(p.v_concat) @ torch.tanh(T(p.w_concat) @ torch.cat([S[i], H[j]]))
                                            for j in range(4)]) for i in range(3)]),
    }
    for name, r in ref.items():
        w, ctx = va.alignment(name, s, h, p)
        np.testing.assert_allclose(w, torch.softmax(r, -1).numpy(), atol=1e-12)
        np.testing.assert_allclose(ctx, (torch.softmax(r, -1) @ H).numpy(), atol=1e-12)
    with pytest.raises(BadInput, match="same width"):
        va.alignment_scores("dot", np.ones((2, 3)), np.ones((4, 2)), p)


def test_variant_costs_by_hand():
    # T_y = 3, T_x = 4, d_s = d_h = 3, d_a = 2
    assert va.n_params("bahdanau", 3, 3, 2) == 2 * 3 + 2 * 3 + 2 == 14
    assert va.n_params("general", 3, 3, 2) == 9 and va.n_params("dot", 3, 3, 2) == 0
    assert va.cost_madds("bahdanau", 3, 4, 3, 3, 2) == 18 + 24 + 24
    assert va.cost_madds("dot", 3, 4, 3, 3, 2) == 36
    assert va.cost_madds("general", 3, 4, 3, 3, 2) == 36 + 36


# ---------------------------------------------------------------- KV cache
def test_kv_cache_gives_identical_logits_and_matches_torch():
    cfg = kv.TinyConfig()
    g = kv.generate("the cat", 6, cfg)
    assert max(s.max_logit_diff for s in g.steps) < 1e-10
    assert [s.cache_tokens for s in g.steps] == list(range(7, 13))
    k, v = g.cache[0]
    assert k.shape == (cfg.n_kv_heads, 13, cfg.d_head)  # 7 prompt + 6 generated
    # an independent torch forward of the same weights with F.scaled_dot_product_attention
    w = kv.tiny_weights(cfg)
    ids = kv.encode(g.text[:-1])
    logits, _ = kv.forward(ids, w, cfg)
    n, H, Hk, dh = len(ids), cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    x = T(w.embed[ids]) + T(kv._positions(0, n, cfg.d_model))
    norm = lambda t: F.layer_norm(t, (cfg.d_model,), eps=1e-5)  # noqa: E731
    for layer in range(cfg.n_layers):
        p = w.attn[layer]
        xn = norm(x)
        q = (xn @ T(p.w_q).T).view(n, H, dh).transpose(0, 1)[None]
        kk = (xn @ T(p.w_k).T).view(n, Hk, dh).transpose(0, 1)[None]
        vv = (xn @ T(p.w_v).T).view(n, Hk, dh).transpose(0, 1)[None]
        a = F.scaled_dot_product_attention(q, kk, vv, is_causal=True, enable_gqa=True)[0].transpose(0, 1).reshape(n, -1)
        x = x + a @ T(p.w_o).T
        x = x + torch.relu(norm(x) @ T(w.mlp_in[layer]).T) @ T(w.mlp_out[layer]).T
    ref = norm(x) @ T(w.unembed).T
    np.testing.assert_allclose(logits, ref.numpy(), atol=1e-9)
    # greedy choice of the last step equals the argmax of the full forward
    assert kv.VOCAB[int(np.argmax(logits[-1]))] == g.text[-1]


def test_kv_cost_and_size_by_hand():
    cfg = kv.TinyConfig(n_layers=1, d_model=4, n_heads=2, n_kv_heads=1, d_ff=8)
    # d_head 2: Q 4*2*2=16, K+V 2*4*1*2=16, O 16 -> 48; scores+mix 2*2*t*2 = 8t; MLP 2*4*8 = 64; out 4*31 = 124
    assert kv.token_madds(cfg, 3) == 48 + 24 + 64 + 124
    assert kv.step_madds(cfg, 3, cached=False) == sum(48 + 8 * t + 64 + 124 for t in (1, 2, 3))
    assert kv.kv_cache_bytes(30, 3, 64, 2048, 1, 2) == 47_185_920  # SmolLM2, 2048 tokens, fp16: 45 MiB
    assert human_bytes(47_185_920) == "45 MiB"  # 47,185,920 / 2^20 = 45
    with pytest.raises(BadInput, match="remove '#'"):
        kv.encode("hi #1")
    with pytest.raises(BadInput):
        kv.generate("abc", 0)


# ---------------------------------------------------------------- mistakes and quiz
def test_mistake_demos():
    rc = rank_collapse(8)
    assert rc["without residual"][-1] < 1e-6 < 0.5 < rc["with residual"][-1]
    w = inverted_padding((4,), 6)
    assert w["correct"][4:].sum() == 0 and w["flipped"][:4].sum() == 0
    wa = wrong_axis(np.array([[2.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(wa["right_row_sums"], 1)
    assert np.abs(wa["wrong_row_sums"] - 1).max() > 0.1
    rc = ratio_check([0.2312, 0.2312, 0.5376], [0.5, 0.5, 1.0])
    assert abs(rc[0, 0] - rc[0, 1]) > 0.1  # the seed's printed row fails the ratio check


def test_quiz_data():
    assert len(QUESTIONS) >= 10 and len({q.key for q in QUESTIONS}) == len(QUESTIONS)
    for q in QUESTIONS:
        assert 0 <= q.answer < len(q.choices) and check(q, q.answer) and not check(q, (q.answer + 1) % len(q.choices))
    assert sum(q.source == "seeds" for q in QUESTIONS) == 3
    assert score({QUESTIONS[0].key: QUESTIONS[0].answer, QUESTIONS[1].key: 0}) == (1, 2)
    worked = next(q for q in QUESTIONS if q.key == "worked_row")
    e = np.exp([0.5, 0.5, 1.0])
    assert worked.choices[worked.answer] == f"{e[0] / e.sum():.4f}"
