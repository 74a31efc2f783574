"""Generation over the KV cache: each step's recorded rows against one full forward over the final sequence,
greedy output against transformers' `generate`, sampling's changes against transformers' own warpers, a seed
that reproduces a run, and the plain messages."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.errors import BadInput
from attnviz.generate import run as gen_run
from attnviz.generate.run import generate
from attnviz.generate.sampling import Sampling, warp
from tests.tiny_models import tiny_loaded

PROMPT = [101, 2023, 2003, 1037, 3231, 2023, 2003]  # a repeated token, so the copying score has steps


def _full(loaded, ids):
    with torch.no_grad():
        out = loaded.model(input_ids=torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    return out


@pytest.fixture(params=["recompute", "stored"])
def mode(request, monkeypatch):
    if request.param == "stored":
        monkeypatch.setattr(gen_run, "recomputable", lambda loaded: False)
    return request.param


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_every_steps_rows_are_the_rows_of_one_full_forward(arch, mode):
    loaded = tiny_loaded(arch)
    g = generate(loaded, PROMPT, Sampling(max_new_tokens=12, stop_at_eos=False))
    assert g.mode == mode and len(g.steps) == 12
    full = _full(loaded, g.ids)
    attn = np.stack([a[0].numpy() for a in full.attentions])  # (layer, head, n, n)
    for i, s in enumerate(g.steps):
        assert s.query == len(PROMPT) + i - 1
        np.testing.assert_allclose(g.row(i), attn[:, :, s.query, : s.query + 1], atol=1e-5, rtol=0)
        np.testing.assert_allclose(s.sink, attn[:, :, s.query, 0], atol=1e-5, rtol=0)
        back = s.query - np.arange(s.query + 1)
        np.testing.assert_allclose(s.distance, attn[:, :, s.query, : s.query + 1] @ back, atol=1e-4, rtol=0)
        hidden = np.stack([h[0, s.query].numpy() for h in full.hidden_states])  # embeddings, then each block
        np.testing.assert_allclose(s.resid[:-1], hidden[:-1], atol=1e-5, rtol=0)
    # a head's map, step by step: the full causal map's rows at the queries
    m = g.head_map(1, 2)
    for i, s in enumerate(g.steps):
        np.testing.assert_allclose(m[i, : s.query + 1], attn[1, 2, s.query, : s.query + 1], atol=1e-5, rtol=0)
        assert np.isnan(m[i, s.query + 1:]).all()


@pytest.mark.parametrize("arch", ["t5", "bart"])
def test_an_encoder_decoder_records_its_decoder_and_cross_attention_exactly(arch):
    """The encoder reads the prompt once; the decoder writes from its start token. Each step's self- and
    cross-attention rows equal one full teacher-forced forward over the final decoder text, and greedy decoding
    writes what transformers' `generate` writes."""
    loaded = tiny_loaded(arch)
    n = 10
    g = generate(loaded, PROMPT, Sampling(max_new_tokens=n, stop_at_eos=False))
    start = loaded.model.config.decoder_start_token_id
    assert g.mode == "stored" and g.encoder_decoder and g.source_ids == PROMPT and g.prompt_ids == [start]
    assert len(g.steps) == n and g.shape == (2, 4)
    with torch.no_grad():
        full = loaded.model(input_ids=torch.tensor([PROMPT]), decoder_input_ids=torch.tensor([g.ids]),
                            output_attentions=True, output_hidden_states=True)
    self_attn = np.stack([a[0].numpy() for a in full.decoder_attentions])  # (layer, head, dec, dec)
    cross = np.stack([a[0].numpy() for a in full.cross_attentions])  # (layer, head, dec, source)
    hidden = np.stack([h[0].numpy() for h in full.decoder_hidden_states])  # (layer + 1, dec, d_model)
    for i, s in enumerate(g.steps):
        assert s.query == i
        np.testing.assert_allclose(g.row(i), self_attn[:, :, i, : i + 1], atol=1e-5, rtol=0)
        np.testing.assert_allclose(s.cross, cross[:, :, i], atol=1e-5, rtol=0)
        np.testing.assert_allclose(s.sink, self_attn[:, :, i, 0], atol=1e-5, rtol=0)
        np.testing.assert_allclose(s.resid[:-1], hidden[:-1, i], atol=1e-5, rtol=0)
        p = torch.softmax(full.logits[0, i], -1)
        assert s.token_id == int(torch.argmax(p)) and s.chosen_before == pytest.approx(float(p[s.token_id]), abs=1e-5)
    with torch.no_grad():
        ref = loaded.model.generate(torch.tensor([PROMPT]), attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
                                    do_sample=False, num_beams=1, max_new_tokens=n, min_new_tokens=n,
                                    no_repeat_ngram_size=0, forced_bos_token_id=None, forced_eos_token_id=None,
                                    repetition_penalty=1.0)
    assert g.ids == ref[0].tolist()
    # the decoder's own KV cache, as measured: 2 x layers x heads x d_head x (decoder positions fed) x 4 bytes
    assert g.cache_bytes == 2 * 2 * 4 * 8 * n * 4


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_greedy_writes_what_transformers_generate_writes(arch):
    loaded = tiny_loaded(arch)
    g = generate(loaded, PROMPT, Sampling(max_new_tokens=15, stop_at_eos=False))
    with torch.no_grad():
        ref = loaded.model.generate(torch.tensor([PROMPT]), attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
                                    do_sample=False, max_new_tokens=15, min_new_tokens=15, pad_token_id=0)
    assert g.ids == ref[0].tolist()
    # the written token is the most likely one, with its probability from the model's logits
    logits = _full(loaded, g.ids).logits[0]
    for s in g.steps:
        p = torch.softmax(logits[s.query], -1)
        assert s.token_id == int(torch.argmax(p)) == int(s.top_ids[0])
        assert s.chosen_before == pytest.approx(float(p[s.token_id]), abs=1e-5)
        assert s.chosen_after == 1.0


def test_kv_cache_bytes_are_the_caches_formula():
    loaded = tiny_loaded("llama")  # 2 layers, 2 key/value heads of 8 dimensions
    g = generate(loaded, PROMPT, Sampling(max_new_tokens=5, stop_at_eos=False))
    n_cached = len(PROMPT) + 5 - 1  # the last token written is never fed back
    assert g.cache_bytes == 2 * 2 * 2 * 8 * n_cached * 4


@pytest.mark.parametrize("s", [
    Sampling(greedy=False, temperature=0.7),
    Sampling(greedy=False, temperature=1.3, top_k=5),
    Sampling(greedy=False, temperature=1.0, top_p=0.8),
    Sampling(greedy=False, temperature=0.5, top_k=50, top_p=0.9),
])
def test_warp_matches_transformers_warpers(s):
    from transformers.generation.logits_process import (LogitsProcessorList, TemperatureLogitsWarper,
                                                        TopKLogitsWarper, TopPLogitsWarper)

    torch.manual_seed(1)
    logits = torch.randn(300) * 3
    chain = LogitsProcessorList([TemperatureLogitsWarper(s.temperature)])
    if s.top_k:
        chain.append(TopKLogitsWarper(s.top_k))
    if s.top_p < 1:
        chain.append(TopPLogitsWarper(s.top_p))
    ref = torch.softmax(chain(None, logits[None])[0], -1)
    got = warp(logits, s)
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=0)
    assert abs(float(got.sum()) - 1) < 1e-5
    kept = int((got > 0).sum())
    assert 1 <= kept < 300 if (s.top_k or s.top_p < 1) else kept == 300


def test_top_p_by_hand():
    # probabilities 0.5, 0.3, 0.2: top-p 0.6 keeps the first two (0.5 < 0.6 <= 0.8), renormalised to 5/8, 3/8
    logits = torch.log(torch.tensor([0.5, 0.3, 0.2]))
    got = warp(logits, Sampling(greedy=False, top_p=0.6))
    torch.testing.assert_close(got, torch.tensor([0.625, 0.375, 0.0]), atol=1e-6, rtol=0)
    # temperature 0.5 squares and renormalises: 0.25, 0.09, 0.04 over 0.38
    got = warp(logits, Sampling(greedy=False, temperature=0.5))
    torch.testing.assert_close(got, torch.tensor([0.25, 0.09, 0.04]) / 0.38, atol=1e-6, rtol=0)


def test_a_seed_reproduces_a_sampled_run():
    loaded = tiny_loaded("llama")
    s = Sampling(greedy=False, temperature=1.5, seed=7, max_new_tokens=20, stop_at_eos=False)
    a, b = generate(loaded, PROMPT, s), generate(loaded, PROMPT, s)
    assert a.ids == b.ids
    others = {tuple(generate(loaded, PROMPT, Sampling(greedy=False, temperature=1.5, seed=k, max_new_tokens=20,
                                                       stop_at_eos=False)).ids) for k in range(3)}
    assert len(others) > 1  # another seed draws other tokens
    for st in a.steps:  # each drawn token had a chance after sampling's changes
        assert st.chosen_after > 0


def test_copying_scores_on_a_repeated_text():
    loaded = tiny_loaded("gpt2")
    rng = np.random.default_rng(0)
    half = [int(t) for t in rng.integers(1000, 2000, 8)]
    g = generate(loaded, half + half[:2], Sampling(max_new_tokens=6, stop_at_eos=False))
    scores, used = g.copying_scores()
    assert used >= 1
    ids = g.ids
    attn = np.stack([a[0].numpy() for a in _full(loaded, ids).attentions])
    want, n = 0.0, 0
    for s in g.steps:
        q = s.query
        t = [j + 1 for j in range(q) if ids[j] == ids[q] and j + 1 < q]
        if t:
            want = want + attn[:, :, q, t].sum(-1)
            n += 1
    assert n == used
    np.testing.assert_allclose(scores, want / n, atol=1e-5, rtol=0)


def test_cancel_keeps_what_was_written():
    import threading

    loaded = tiny_loaded("llama")
    flag = threading.Event()
    seen = []

    def on_step(step):
        seen.append(step.token_id)
        if len(seen) == 3:
            flag.set()

    g = generate(loaded, PROMPT, Sampling(max_new_tokens=10, stop_at_eos=False), cancel=flag, on_step=on_step)
    assert g.stopped == "cancelled" and [s.token_id for s in g.steps] == seen and len(seen) == 3


def test_end_of_sequence_stops():
    loaded = tiny_loaded("llama")
    first = generate(loaded, PROMPT, Sampling(max_new_tokens=4, stop_at_eos=False))
    loaded.tokenizer.eos_token_id  # the MiniLM tokenizer has none: make the second token written the end
    g_eos = first.steps[1].token_id
    orig = gen_run.generate
    loaded_eos = tiny_loaded("llama")
    loaded_eos.tokenizer = type("T", (), {"eos_token_id": g_eos})()
    g = orig(loaded_eos, PROMPT, Sampling(max_new_tokens=4, stop_at_eos=True))
    assert g.stopped == "eos" and g.steps[-1].token_id == g_eos and len(g.steps) <= 2


def test_plain_messages():
    with pytest.raises(BadInput, match="causal language model.*bert is an encoder"):
        generate(tiny_loaded("bert"), PROMPT, Sampling())
    llama = tiny_loaded("llama")  # context of 64 positions
    with pytest.raises(BadInput, match="empty"):
        generate(llama, [], Sampling())
    with pytest.raises(BadInput, match="fills"):
        generate(llama, [5] * 64, Sampling())
    with pytest.raises(BadInput, match="at most 14 new tokens"):
        generate(llama, [5] * 50, Sampling(max_new_tokens=20))
    with pytest.raises(BadInput, match="decoder has 64 positions.*at most 63 new tokens"):
        generate(tiny_loaded("bart"), PROMPT, Sampling(max_new_tokens=64))  # BART: 64 decoder positions
    with pytest.raises(BadInput, match="Top-p"):
        generate(llama, PROMPT, Sampling(greedy=False, top_p=1.5))
    assert Sampling(greedy=False, temperature=0).is_greedy and Sampling(greedy=False, top_p=0).is_greedy
    assert "greedy" in " ".join(Sampling(greedy=False, temperature=0).notes())


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_step_lens_ends_on_the_models_own_distribution(arch):
    from attnviz.generate.run import step_lens

    loaded = tiny_loaded(arch)
    g = generate(loaded, PROMPT, Sampling(max_new_tokens=3, stop_at_eos=False))
    for s in g.steps:
        labels, probs = step_lens(loaded, s, k=5)
        assert labels.shape == probs.shape == (loaded.facts.n_layers + 1, 5)
        np.testing.assert_allclose(probs[-1], s.p_before[:5], atol=1e-5, rtol=0)  # the output state is the model's
        assert (np.diff(probs, axis=1) <= 1e-12).all()  # most likely first


def test_the_lens_over_a_generation_is_each_steps_own():
    """The value-weighted lens at a step's query is ‖α f(x)‖ of that step: the recorded row times each earlier
    token's value-vector length, as shares; and it equals the lens over only the text that step read (a causal
    row depends on earlier positions only). ALTI has one map per layer, rows summing to 1."""
    from attnviz.contrib.compute import ids_contributions
    from attnviz.contrib.decompose import rows_normalised

    loaded = tiny_loaded("llama")
    g = generate(loaded, PROMPT, Sampling(max_new_tokens=6, stop_at_eos=False))
    vw = gen_run.lens_rows(loaded, g, "value-weighted")
    n = len(g.ids) - 1
    assert vw.shape == (2, 4, n, n)
    norms = ids_contributions(loaded, g.ids[:-1]).value_norms  # (layer, head, key)
    for i, s in enumerate(g.steps):
        q = s.query
        want = rows_normalised(g.row(i) * norms[:, :, : q + 1])
        np.testing.assert_allclose(vw[:, :, q, : q + 1], want, atol=1e-5, rtol=0)
        prefix = rows_normalised(ids_contributions(loaded, g.ids[: q + 1]).value_weighted)[:, :, q]
        np.testing.assert_allclose(vw[:, :, q, : q + 1], prefix, atol=1e-5, rtol=0)
    alti = gen_run.lens_rows(loaded, g, "ALTI")
    assert alti.shape == (2, 1, n, n)
    np.testing.assert_allclose(alti.sum(-1), 1.0, atol=1e-5)
    with pytest.raises(BadInput, match="encoder-decoder"):
        t5 = tiny_loaded("t5")
        gen_run.lens_rows(t5, generate(t5, PROMPT, Sampling(max_new_tokens=2, stop_at_eos=False)), "ALTI")
