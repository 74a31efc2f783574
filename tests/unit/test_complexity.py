"""Cost formulas against hand calculations, monotonicity, relations between variants, bad input."""
import math

import numpy as np
import pytest

from attnviz.complexity import costs as cx
from attnviz.errors import BadInput
from attnviz.units import human_flops

BERT = cx.PRESETS["BERT-base"].config  # n=512, d=768, h=12, L=12, fp16, d_ff=3072
LLAMA = cx.PRESETS["LLaMA-7B-like"].config


def test_bert_base_at_512_by_hand():
    c = cx.variant_costs(BERT)
    # 2 matmuls x 2 FLOPs x 512 queries x 512 keys x 768 = 805,306,368 per layer; x 12 layers
    assert c["mha"].flops_forward == 805_306_368 * 12 == 9_663_676_416
    assert c["full"].flops_forward == c["mha"].flops_forward
    assert c["mha"].flops_training == 3 * 9_663_676_416
    # flash recomputes one of the two matmuls in backward: 7 matmuls instead of 6
    assert c["flash"].flops_training == 7 * 2 * 512 * 512 * 768 * 12
    # one head's 512 x 512 matrix in fp16: 524,288 bytes; 12 heads: 6,291,456
    assert c["full"].attention_matrix_bytes == 524_288
    assert c["mha"].attention_matrix_bytes == 6_291_456
    assert cx.attention_matrix_bytes(BERT.with_(dtype="fp32"), "mha") == 12_582_912
    # flash: 512 rows x 128-wide tile x 12 heads x 2 bytes
    assert c["flash"].attention_matrix_bytes == 1_572_864
    # KV cache: 2 x 12 layers x 12 heads x 64 x 2 bytes = 36,864 per token; x 512 tokens
    assert c["mha"].kv_cache_bytes_per_token == 36_864
    assert c["mha"].kv_cache_bytes == 18_874_368
    assert c["mqa"].kv_cache_bytes_per_token == 3_072
    # activations per layer: x, Q, K, V, out = 5 x 512 x 768 values + 12 x 512^2 probabilities
    assert c["mha"].activation_bytes == 12 * 2 * (5 * 512 * 768 + 12 * 512 * 512) == 122_683_392
    assert c["flash"].activation_bytes == 12 * (2 * 5 * 512 * 768 + 12 * 512 * 4)
    # window 128: 4 x 512 x 128 x 768 x 12
    assert c["window"].flops_forward == 2_415_919_104
    # sparse, s = sqrt(512) -> 22: 22 + ceil(512/22) = 22 + 24 = 46 keys
    assert c["sparse"].keys_per_query == 46
    # linear: 4 n d dh + 3 n d per layer = 4*512*768*64 + 3*512*768 = 101,842,944; x 12
    assert c["linear"].flops_forward == 1_222_115_328
    # projections: 8 n d^2 = 2,415,919,104 per layer; feed-forward 16 n d^2 = 4,831,838,208
    assert cx.projection_flops(BERT) == 12 * 2_415_919_104
    assert cx.ffn_flops(BERT) == 12 * 4_831_838_208


def test_llama_7b_numbers():
    # 2 x 32 layers x 32 KV heads x 128 x 2 bytes = 0.5 MiB per token (the well-known figure)
    assert cx.kv_cache_bytes_per_token(LLAMA, "mha") == 524_288
    gqa = LLAMA.with_(n_kv_heads=8)
    assert cx.kv_cache_bytes_per_token(gqa, "gqa") == 131_072
    assert cx.variant_kv_cache_bytes(gqa, "gqa") == 131_072 * 2048


def test_feed_forward_crossover():
    assert cx.ffn_crossover(BERT) == 3072 == 4 * BERT.d_model
    assert cx.ffn_crossover(cx.PRESETS["GPT-2 small"].config) == 3072
    assert cx.ffn_crossover(LLAMA) == 3 * 11008 / 2 == 16512
    # at the crossover, attention core FLOPs equal feed-forward FLOPs exactly
    at = BERT.with_(seq_len=3072)
    assert cx.core_flops(at, "mha") == cx.ffn_flops(at)
    assert cx.core_flops(at.with_(seq_len=3071), "mha") < cx.ffn_flops(at.with_(seq_len=3071))


def test_rnn_comparison():
    assert cx.rnn_crossover(BERT) == 768
    at = BERT.with_(seq_len=768)
    assert cx.core_flops(at, "mha") == cx.rnn_flops(at)
    assert cx.sequential_steps(BERT) == {"attention": 1, "rnn": 512}


@pytest.mark.parametrize("metric", list(cx.METRICS))
def test_monotone_in_n(metric):
    ns = cx.length_grid(4096)
    for v in cx.VARIANTS:
        y = cx.curve(BERT, metric, v, ns)
        assert np.all(np.diff(y) >= 0), (metric, v)
    y = cx.curve(BERT, metric, "mha", ns)
    assert np.all(np.diff(y) > 0)


def test_variant_relations():
    for n in (64, 128, 129, 1000, 100_000):
        cfg = BERT.with_(seq_len=n)
        flash, mha = cx.attention_matrix_bytes(cfg, "flash"), cx.attention_matrix_bytes(cfg, "mha")
        if n > cfg.flash_block:
            assert flash < mha
        else:
            assert flash == mha
        assert cx.activation_bytes(cfg, "flash") < cx.activation_bytes(cfg, "mha")
        assert cx.core_flops(cfg, "flash") == cx.core_flops(cfg, "mha")
        assert cx.core_flops(cfg, "window") <= cx.core_flops(cfg, "mha")
        assert cx.attention_matrix_bytes(cfg, "full") * cfg.n_heads == mha
    big = BERT.with_(seq_len=10_000)
    assert cx.core_flops(big, "linear") < cx.core_flops(big, "sparse") < cx.core_flops(big, "mha")
    g = LLAMA.with_(n_kv_heads=4)
    assert cx.variant_kv_cache_bytes(g, "gqa") * 8 == cx.variant_kv_cache_bytes(g, "mha")
    assert cx.core_flops(g, "gqa") == cx.core_flops(g, "mha")
    # the window caches only w tokens, linear attention a fixed state independent of n
    assert cx.variant_kv_cache_bytes(BERT.with_(seq_len=10_000), "window") == 128 * 36_864
    assert cx.variant_kv_cache_bytes(BERT.with_(seq_len=10), "linear") == cx.variant_kv_cache_bytes(big, "linear")


def test_sparse_is_n_sqrt_n():
    # with s = sqrt(n): keys per query = 2 sqrt(n), so FLOPs grow like n^1.5
    a, b = BERT.with_(seq_len=4096), BERT.with_(seq_len=16384)
    assert cx.keys_per_query(a, "sparse") == 64 + 64
    assert cx.core_flops(b, "sparse") / cx.core_flops(a, "sparse") == pytest.approx(4 ** 1.5)


def test_kv_cache_formula_is_the_one_lab_7_uses():
    from attnviz.lab import kv_cache as kv

    assert kv.kv_cache_bytes is cx.kv_cache_bytes  # one formula, not two
    # BERT-base in fp16: 2 x 12 layers x 12 KV heads x 64 x 2 bytes = 36,864 bytes per token
    assert cx.kv_cache_bytes(12, 12, 64, 1, 1, 2) == 36_864
    assert cx.kv_cache_bytes_per_token(BERT, "mha") == cx.kv_cache_bytes(12, 12, 64, 1, 1, 2)
    with pytest.raises(BadInput, match="negative"):
        cx.kv_cache_bytes(12, -1, 64, 1)


def test_dtypes_take_their_bytes_from_units():
    assert [BERT.with_(dtype=d).bytes_per_value for d in cx.DTYPES] == [4, 2, 2, 1]


def test_sentence_one_head_100k_fp16():
    text = cx.sentences(BERT.with_(seq_len=100_000))
    assert text["one_head"] == ("One head's attention matrix at n = 100,000 in fp16 holds 10 billion "
                                "scores: 18.6 GiB.")  # 2e10 bytes / 2^30
    assert "3,072" in text["ffn"]


@pytest.mark.parametrize("changes, fragment", [
    (dict(seq_len=0), "at least 1"),
    (dict(seq_len=-5), "at least 1"),
    (dict(seq_len=3.5), "whole number"),
    (dict(batch=0), "Batch size must be at least 1"),
    (dict(d_model=1.5), "whole number"),
    (dict(n_heads=7), "not divisible by 7 heads"),
    (dict(n_kv_heads=5), "cannot be split evenly"),
    (dict(n_kv_heads=24), "more KV heads"),
    (dict(seq_len=10 ** 12), "beyond what this calculator handles"),
    (dict(n_layers=True), "whole number"),
    (dict(dtype="fp13"), "Unknown dtype"),
    (dict(window=0), "window"),
])
def test_bad_input_plain_messages(changes, fragment):
    with pytest.raises(BadInput) as e:
        BERT.with_(**changes)
    msg = str(e.value)
    assert fragment in msg and "Traceback" not in msg and msg.endswith(".")


def test_whole_floats_are_accepted():
    assert BERT.with_(seq_len=1024.0).seq_len == 1024


@pytest.mark.parametrize("text, value", [("512", 512), ("100k", 100_000), ("1.5M", 1_500_000),
                                         ("1e6", 1_000_000), ("2^20", 1_048_576), ("1,000,000", 1_000_000),
                                         (" 64 ", 64)])
def test_parse_length(text, value):
    assert cx.parse_length(text) == value


@pytest.mark.parametrize("text", ["", "abc", "3.5", "0", "-4", "1e9", "1e400", "2^1000", "1.2345k", "nan"])
def test_parse_length_rejects(text):
    with pytest.raises(BadInput):
        cx.parse_length(text)


def test_no_overflow_at_the_limits():
    cfg = cx.AttentionConfig(seq_len=cx.MAX_SEQ_LEN, batch=1_000_000, d_model=1_000_000, n_heads=1000,
                             n_kv_heads=1000, n_layers=10_000, dtype="fp32", d_ff=10_000_000)
    c = cx.variant_costs(cfg)
    expect = 4 * cx.MAX_SEQ_LEN ** 2 * 1_000_000 * 1_000_000 * 10_000  # exact Python int
    assert c["mha"].flops_forward == expect
    assert human_flops(expect).endswith("ZFLOP")
    y = cx.curve(cfg, "flops_training", "flash", cx.length_grid(cfg.seq_len))
    assert np.all(np.isfinite(y)) and y[-1] == pytest.approx(float(c["flash"].flops_training))


def test_length_grid():
    g = cx.length_grid(3000)
    assert 3000 in g and g[0] == 16 and np.all(np.diff(g) > 0) and g[-1] == 2 ** 17
    assert cx.length_grid(cx.MAX_SEQ_LEN)[-1] == cx.MAX_SEQ_LEN


def test_config_from_facts():
    from attnviz.types import ModelFacts

    facts = ModelFacts(name="smol", kind="decoder", architecture="LlamaForCausalLM", n_layers=30,
                       n_heads=9, n_kv_heads=3, d_model=576, max_positions=8192)

    class HF:
        intermediate_size = 1536
        model_type = "llama"

    d_ff, gated = cx.feed_forward_from_hf(HF(), 576)
    assert (d_ff, gated) == (1536, True)
    cfg = cx.config_from_facts(facts, d_ff=d_ff, gated=gated)
    assert (cfg.seq_len, cfg.n_kv_heads, cfg.d_head) == (8192, 3, 64)
    assert cx.ffn_crossover(cfg) == 3 * 1536 / 2
    assert cx.feed_forward_from_hf(None, 384) == (1536, False)
