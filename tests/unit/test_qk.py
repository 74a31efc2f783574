"""Query · key capture: q and k against hand computations, and softmax(q·k × scaling) against extract."""
import numpy as np
import pytest
import torch

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.extract import extract
from attnviz.query_key.qk import query_key, query_row, top_keys
from tests.tiny_models import tiny_loaded

SENTENCE = "The cat sat on the mat because it was tired."


def _softmax(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Independent softmax over the last axis with a bool mask (float64)."""
    s = np.where(allowed, scores.astype(np.float64), -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _all_rows(qk, causal: bool) -> np.ndarray:
    q, k = qk.query.astype(np.float64), qk.key.astype(np.float64)
    scores = np.einsum("lhqd,lhkd->lhqk", q, k) * qk.scaling[:, None, None, None]
    n = qk.seq_len
    allowed = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
    return _softmax(scores, allowed)


@pytest.fixture(scope="module")
def minilm_qk(minilm):
    return query_key(minilm, SENTENCE), extract(minilm, SENTENCE)


def test_minilm_layer0_q_and_k_equal_the_model_weights_by_hand(minilm, minilm_qk):
    qk, r = minilm_qk
    model = minilm.model
    with torch.no_grad():
        x = model.embeddings(input_ids=torch.tensor([r.token_ids]))[0].double()  # (T, d_model)
        att = model.encoder.layer[0].attention.self
        q = x @ att.query.weight.double().T + att.query.bias.double()
        k = x @ att.key.weight.double().T + att.key.bias.double()
    q = q.view(-1, 12, 32).transpose(0, 1).numpy()  # (H, T, d_head)
    k = k.view(-1, 12, 32).transpose(0, 1).numpy()
    assert qk.query.shape == (6, 12, r.seq_len, 32) and qk.query.dtype == np.float32
    np.testing.assert_allclose(qk.query[0], q, atol=2e-5)
    np.testing.assert_allclose(qk.key[0], k, atol=2e-5)
    np.testing.assert_allclose(qk.scaling, 32 ** -0.5)
    assert qk.tokens == r.tokens and not qk.causal
    assert not qk.query.flags.writeable  # shared through a cache


def test_minilm_softmax_of_scaled_dots_is_the_extracted_attention(minilm_qk):
    qk, r = minilm_qk
    np.testing.assert_allclose(_all_rows(qk, causal=False), r.attention, atol=1e-5)
    assert qk.max_error < 1e-5
    row = query_row(qk, 3, 7, 5, r.attention[3, 7, 5])
    assert row.max_error < 1e-5
    np.testing.assert_allclose(row.weights, r.attention[3, 7, 5], atol=1e-5)


def test_products_sum_over_dimensions_to_the_score(minilm_qk):
    qk, r = minilm_qk
    row = query_row(qk, 2, 4, 3)
    q, k = qk.query[2, 4, 3].astype(float), qk.key[2, 4].astype(float)
    assert row.products.shape == (r.seq_len, 32)
    np.testing.assert_allclose(row.products[6], q * k[6], rtol=1e-12)
    np.testing.assert_allclose(row.products.sum(axis=1), k @ q, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(row.scores, (k @ q) / np.sqrt(32), rtol=1e-10, atol=1e-10)
    assert row.weights.sum() == pytest.approx(1.0)


def test_top_keys_are_the_largest_in_text_order(minilm_qk):
    qk, r = minilm_qk
    row = query_row(qk, 0, 0, 2)
    want = np.sort(np.argsort(-r.attention[0, 0, 2])[:4])
    np.testing.assert_array_equal(top_keys(row, 4, by="weight"), want)
    want_score = np.sort(np.argsort(-np.abs(row.scores))[:3])
    np.testing.assert_array_equal(top_keys(row, 3, by="score"), want_score)
    assert len(top_keys(row, 100)) == r.seq_len


@pytest.mark.parametrize("args", [(6, 0, 0), (-1, 0, 0), (0, 12, 0), (0, 0, 99), (0, 0, -1), (0, 1.5, 0), (0, 0, "a")])
def test_bad_layer_head_or_query_is_a_plain_error(minilm_qk, args):
    qk, _ = minilm_qk
    with pytest.raises(BadInput, match="does not exist: this model has"):
        query_row(qk, *args)


def test_a_row_that_does_not_match_is_refused(minilm_qk):
    qk, r = minilm_qk
    wrong = r.attention[0, 1, 2]  # another head's row
    with pytest.raises(AttentionUnavailable, match="plain scaled dot products"):
        query_row(qk, 0, 0, 2, wrong)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_causal_models_reproduce_their_attention(arch):
    loaded = tiny_loaded(arch)
    qk, r = query_key(loaded, SENTENCE), extract(loaded, SENTENCE)
    assert qk.causal
    rebuilt = _all_rows(qk, causal=True)
    np.testing.assert_allclose(rebuilt, r.attention, atol=1e-5)
    assert np.allclose(np.triu(r.attention, 1), 0)  # the causal mask really applied
    row = query_row(qk, 1, 3, 4, r.attention[1, 3, 4])
    assert row.visible.tolist() == [j <= 4 for j in range(r.seq_len)]
    assert (row.weights[5:] == 0).all() and row.weights[:5].sum() == pytest.approx(1.0)
    assert loaded.model.config._attn_implementation == "eager"  # restored after the capture


def test_llama_keys_are_rotated_and_shared_by_grouped_heads():
    """Layer 0 of a tiny Llama (4 query heads, 2 kv heads): k = RoPE(k_proj(norm(x))) by hand."""
    loaded = tiny_loaded("llama")
    qk, r = query_key(loaded, SENTENCE), extract(loaded, SENTENCE)
    assert qk.n_kv_heads == 2
    np.testing.assert_array_equal(qk.key[:, 0], qk.key[:, 1])  # head h uses kv head h // 2
    np.testing.assert_array_equal(qk.key[:, 2], qk.key[:, 3])
    assert not np.allclose(qk.key[:, 0], qk.key[:, 2])
    model = loaded.model.model
    d = 8
    with torch.no_grad():
        x = model.layers[0].input_layernorm(model.embed_tokens(torch.tensor([r.token_ids])))[0].double()
        k = (x @ model.layers[0].self_attn.k_proj.weight.double().T).view(-1, 2, d).transpose(0, 1)  # (H_kv, T, d)
        q = (x @ model.layers[0].self_attn.q_proj.weight.double().T).view(-1, 4, d).transpose(0, 1)
    theta = loaded.model.config.rope_parameters["rope_theta"]
    pos = np.arange(r.seq_len)[:, None] * (1.0 / theta ** (np.arange(0, d, 2) / d))[None, :]  # (T, d/2)
    cos, sin = np.cos(np.concatenate([pos, pos], 1)), np.sin(np.concatenate([pos, pos], 1))

    def rope(v):
        v = v.numpy()
        half = np.concatenate([-v[..., d // 2:], v[..., :d // 2]], -1)
        return v * cos + half * sin

    np.testing.assert_allclose(qk.key[0, 2], rope(k)[1], atol=1e-5)
    np.testing.assert_allclose(qk.query[0, 3], rope(q)[3], atol=1e-5)
    assert not np.allclose(qk.key[0, 2], k[1].numpy(), atol=1e-3)  # RoPE really changed them


def test_encoder_decoder_gives_the_encoder_self_attention():
    loaded = tiny_loaded("bart")
    qk, r = query_key(loaded, SENTENCE), extract(loaded, SENTENCE)
    assert qk.n_layers == 2 and not qk.causal
    np.testing.assert_allclose(_all_rows(qk, causal=False), r.attention, atol=1e-5)


def test_t5_relative_position_bias_is_refused_plainly():
    loaded = tiny_loaded("t5")
    with pytest.raises(AttentionUnavailable, match=r"plain scaled dot products.*'t5'"):
        query_key(loaded, SENTENCE)
    assert loaded.model.config._attn_implementation == "eager"


def test_empty_text_is_a_plain_error(minilm):
    with pytest.raises(BadInput, match="empty"):
        query_key(minilm, "   ")


@pytest.mark.slow
def test_smollm2_rope_and_grouped_query_attention():
    from attnviz.models import load_model

    loaded = load_model("smollm2")
    qk, r = query_key(loaded, SENTENCE), extract(loaded, SENTENCE)
    assert qk.n_heads == 9 and qk.n_kv_heads == 3 and qk.d_head == 64
    np.testing.assert_array_equal(qk.key[:, 0], qk.key[:, 2])  # kv head 0 serves query heads 0-2
    np.testing.assert_allclose(_all_rows(qk, causal=True), r.attention, atol=1e-4)
