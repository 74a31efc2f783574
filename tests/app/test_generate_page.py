"""AppTest of the Generate page: a plain message and the switch on the default encoder; on a tiny random Llama
saved in a folder, a greedy generation whose tokens, candidates, step grid and head map match the model's own
full forward, a step chosen from the written tokens, and sampling that changes the distribution."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch

from tests.app.apptest import open_page
from tests.figures import decode
from tests.tiny_models import build

PAGE = "app_pages/generate.py"
TEXT = "the cat sat on the mat and the cat"


@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    model, tok, _ = build("llama")
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder), model, tok


def _specs(at) -> dict:
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    return {s["layout"]["title"]["text"]: s for s in specs}


def _generated(at, timeout: float = 120):
    """Run the page until the generation job started by the last click has ended and its result is shown."""
    before = at.session_state["_gen_done"] if "_gen_done" in at.session_state else None
    deadline = time.time() + timeout
    while time.time() < deadline:
        at.run()
        assert not at.exception, at.exception
        if "_gen_done" in at.session_state and at.session_state["_gen_done"] is not before:
            at.run()
            return at.session_state["_gen_done"][1]
        time.sleep(0.3)
    raise AssertionError("the generation did not end")


def test_default_encoder_gets_a_plain_message():
    at = open_page(PAGE)
    info = " ".join(i.value for i in at.info)
    assert "causal language model" in info and "minilm is an encoder" in info
    assert not at.get("plotly_chart")


def test_greedy_generation_on_a_tiny_llama(llama_folder):
    folder, model, tok = llama_folder
    at = open_page(PAGE, text=TEXT, model_choice="other", custom_model=folder)
    assert not at.warning, [w.value for w in at.warning]
    at.number_input(key="gen_new").set_value(12).run()
    at.button(key="gen_run").click()
    g = _generated(at)
    assert len(g.steps) == 12 and g.sampling.is_greedy
    prompt = tok(TEXT)["input_ids"]
    assert g.ids[: len(prompt)] == prompt
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             do_sample=False, max_new_tokens=12, min_new_tokens=12, pad_token_id=0)
        full = model(input_ids=torch.tensor([g.ids]), output_attentions=True)
    assert g.ids == ref[0].tolist()
    specs = _specs(at)
    cand = specs["Candidates at step 0"]
    p = torch.softmax(full.logits[0, len(prompt) - 1], -1)
    top = torch.topk(p, 20)
    np.testing.assert_allclose(decode(cand["data"][0]["x"]), top.values.numpy(), atol=1e-5)
    np.testing.assert_allclose(decode(cand["data"][1]["x"])[0], 1.0)  # greedy: all on the most likely token
    grid = np.asarray(decode(specs["Step 0: every head's attention"]["data"][0]["z"]), dtype=float)
    attn = np.stack([a[0].numpy() for a in full.attentions])  # (layer, head, n, n)
    q = len(prompt) - 1
    np.testing.assert_allclose(grid, attn[:, :, q, : q + 1].reshape(-1, q + 1), atol=1e-5)
    m = np.asarray(decode(specs["Layer 0, head 0: the map as it was written"]["data"][0]["z"]), dtype=float)
    for i in range(12):
        np.testing.assert_allclose(m[i, : q + 1 + i], attn[0, 0, q + i, : q + 1 + i], atol=1e-5)
    assert any("Wrote **12 tokens**" in s.value for s in at.success)

    # scrub to step 5: its candidates and its query's text; the written tokens' pills follow
    at.slider(key="gen_step").set_value(5).run()
    assert at.session_state["gen_token_pick"] == 5
    assert "Candidates at step 5" in _specs(at)
    assert any("**Step 5** wrote" in m.value for m in at.markdown)

    # sampling: a high temperature flattens the distribution the token is drawn from
    at.segmented_control(key="gen_mode").set_value("Sample").run()
    at.slider(key="gen_temp").set_value(2.0).run()
    at.button(key="gen_run").click()
    g2 = _generated(at)
    assert not g2.sampling.is_greedy and g2.sampling.temperature == 2.0
    after = decode(_specs(at)["Candidates at step 0"]["data"][1]["x"])
    z = full.logits[0, q] / 2.0
    np.testing.assert_allclose(after, torch.softmax(z, -1)[top.indices].numpy(), atol=1e-5)

    # the KV cache lab shows this run's measured cache beside its formula
    at.switch_page("app_pages/lab_kv_cache.py")
    at.run()
    assert not at.exception, at.exception
    note = " ".join(i.value for i in at.info)
    n_cached = len(g2.ids) - 1
    assert f"measured **{g2.cache_bytes:,} bytes**" in note and "— the same." in note
    assert g2.cache_bytes == 2 * 2 * 2 * 8 * n_cached * 4  # tiny Llama: 2 layers, 2 key/value heads of 8


def test_an_encoder_decoder_writes_from_its_start_token_and_shows_its_cross_attention(tmp_path):
    """A tiny random T5 in a folder: the encoder reads the sidebar's text, the decoder writes from its start
    token; the page's cross-attention grid of a step is the model's own teacher-forced cross-attention, and the
    KV cache lab measures the decoder's cache with the decoder's shape."""
    model, tok, _ = build("t5")
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    at = open_page(PAGE, text=TEXT, model_choice="other", custom_model=str(tmp_path))
    assert not at.warning, [m.value for m in at.warning]
    assert not any("causal language model" in i.value for i in at.info)
    assert any("is an encoder-decoder" in c.value for c in at.caption)
    at.number_input(key="gen_new").set_value(6).run()
    at.button(key="gen_run").click()
    g = _generated(at)
    prompt = tok(TEXT)["input_ids"]
    assert g.source_ids == prompt and g.prompt_ids == [0] and len(g.steps) == 6
    with torch.no_grad():
        full = model(input_ids=torch.tensor([prompt]), decoder_input_ids=torch.tensor([g.ids]), output_attentions=True)
    at.slider(key="gen_step").set_value(3).run()
    specs = _specs(at)
    cross = np.asarray(decode(specs["Step 3: every head's cross-attention"]["data"][0]["z"]), dtype=float)
    want = np.stack([a[0, :, 3].numpy() for a in full.cross_attentions])  # (layer, head, source)
    np.testing.assert_allclose(cross, want.reshape(-1, len(prompt)), atol=1e-5)
    own = np.asarray(decode(specs["Step 3: every head's attention"]["data"][0]["z"]), dtype=float)
    np.testing.assert_allclose(own, np.stack([a[0, :, 3, :4].numpy() for a in full.decoder_attentions]).reshape(-1, 4),
                               atol=1e-5)
    assert "Logit lens of step 3" not in specs
    assert any("What it read in the prompt" in m.value for m in at.markdown)
    at.switch_page("app_pages/lab_kv_cache.py")
    at.run()
    note = " ".join(i.value for i in at.info)
    assert f"measured **{g.cache_bytes:,} bytes**" in note and "— the same." in note
    assert g.cache_bytes == 2 * 2 * 4 * 8 * 6 * 4  # decoder: 2 layers, 4 heads of 8, 6 positions fed


def test_the_sidebars_lens_shades_the_text(llama_folder):
    """Show: value-weighted in the sidebar: the step's text is shaded by its value-weighted shares (the lens's
    own numbers), said on the page; the grids keep the weights."""
    from attnviz.generate.run import lens_rows
    from attnviz.models import load_model

    folder, _, _ = llama_folder
    at = open_page(PAGE, text=TEXT, model_choice="other", custom_model=folder, lens="value-weighted")
    at.number_input(key="gen_new").set_value(4).run()
    at.button(key="gen_run").click()
    g = _generated(at)
    assert any("value-weighted" in i.value and "grids" in i.value for i in at.info)
    vw = lens_rows(load_model(folder), g, "value-weighted")
    q = g.steps[0].query
    body = next(h.proto.body for h in at.get("html") if "data-weight=" in h.proto.body)
    for j in (0, q // 2, q):
        assert f'data-weight="{vw[0, 0, q, j]:.6f}"' in body


def test_written_tokens_that_repeat_get_distinct_pills():
    """The browser tells pills apart by their labels: a token written twice must not open the other copy's step."""
    from attnviz.ui.generate import pill_labels

    shown = pill_labels(["the", "cat", "the", "", "the"])
    assert len(set(shown)) == 5
    assert [s.replace("\u200b", "") for s in shown] == ["the", "cat", "the", "∅", "the"]


def test_a_link_with_settings_out_of_range_keeps_the_model_and_text_and_says_what_was_set(llama_folder):
    """A temperature of 9 (the slider takes 0 to 2) and 99,999 new tokens in a link: each is set to its bound with a
    sentence under its control; the link's model and text stay (a refused slider value used to drop the whole
    link)."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import APP

    folder, _, _ = llama_folder
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"model_choice": "other", "custom_model": folder, "text": TEXT, "gen_temp": "9",
                            "gen_topp": "-1", "gen_new": "99999"})
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    assert (at.session_state["model_choice"], at.session_state["custom_model"], at.session_state["text"]) == (
        "other", folder, TEXT)
    said = [w.value for w in at.warning]
    assert "“Temperature” takes values from 0 to 2: 9 was set to 2, and the page shows results for 2." in said, said
    assert "“Top-p” takes values from 0 to 1: -1 was set to 0, and the page shows results for 0." in said, said
    new = at.number_input(key="gen_new")
    assert any(w.startswith(f"“Max new tokens” takes values from 1 to {new.value:,}: 99,999 was set to") for w in said)
    assert at.slider(key="gen_temp").value == 2.0 and at.slider(key="gen_topp").value == 0.0


def test_a_prompt_longer_than_the_page_records_says_where_it_was_cut(llama_folder):
    folder, _, _ = llama_folder
    at = open_page(PAGE, text="the cat " * 400, model_choice="other", custom_model=folder)
    (note,) = [i.value for i in at.info if "tokens long" in i.value]
    assert note.startswith("The text is 802 tokens long; the prompt is its first 64 (the last 738 were dropped): "
                           "the model's whole context.")  # the tiny Llama's context is 64 positions
