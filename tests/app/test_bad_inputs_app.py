"""AppTest: bad inputs whose message comes from a page (or the sidebar) show a plain sentence, never a traceback.

Rows of docs/bad-inputs.md tested here; the others are covered where the table says."""
from __future__ import annotations

import pytest

from tests.app.apptest import open_page

ONLY_SPECIAL = "\u0301\u0301"  # combining accents: the uncased tokenizer strips them -> [CLS] [SEP] only


_open = open_page


def _said(at, kind: str = "warning") -> str:
    return " ".join(e.value for e in getattr(at, kind))


def test_other_model_with_blank_id_asks_for_one():
    at = _open("app_pages/heatmap.py", model_choice="other", custom_model="   ")
    assert "Type a HuggingFace hub id or a local model folder" in _said(at, "info")
    assert not at.get("plotly_chart")


def test_model_path_that_is_a_file_is_explained(tmp_path):
    f = tmp_path / "weights.bin"
    f.write_bytes(b"0")
    at = _open("app_pages/heatmap.py", model_choice="other", custom_model=str(f))
    assert "is a file, not a model folder" in _said(at)


def test_text_longer_than_the_model_says_what_was_dropped():
    at = _open("app_pages/heatmap.py", text="word " * 600)  # 600 words + [CLS] [SEP]; MiniLM takes 512
    msg = _said(at, "info")
    assert "The text is 602 tokens long; the model takes at most 512, so the last 90 tokens were dropped" in msg
    assert at.get("plotly_chart")  # the first 512 tokens are still shown


def test_heatmap_hiding_every_token_is_explained():
    at = _open("app_pages/heatmap.py", text=ONLY_SPECIAL, hm_hide_special=True)
    assert "Nothing is left to show" in _said(at)


def test_entropy_without_special_rows_on_special_only_text():
    at = _open("app_pages/entropy.py", text=ONLY_SPECIAL)
    at.toggle(key="en_special").set_value(False).run()
    assert not at.exception
    assert "only special tokens" in _said(at)


def test_compare_model_b_blank_id():
    at = _open("app_pages/compare.py", text="The cat sat on the mat.")
    at.radio(key="cmp_mode").set_value("Two models").run()
    at.selectbox(key="cmp_model_pick").set_value("other").run()
    assert not at.exception
    assert "Type a hub id or folder for model B." in _said(at, "info")


@pytest.mark.parametrize("text, expected", [
    ("   ", "Type at least one token."),
    (" ".join(["tok"] * 13), "13 tokens: the lab shows at most 12"),
])
def test_multihead_lab_token_count(text, expected):
    at = _open("app_pages/lab_multihead.py")
    at.text_input(key="mh_text").set_value(text).run()
    assert not at.exception
    assert expected in _said(at)


def test_variants_lab_too_many_tokens():
    at = _open("app_pages/lab_variants.py")
    at.text_input(key="var_src").set_value(" ".join(["w"] * 13)).run()
    assert not at.exception
    assert "Type 1 to 12 space-separated tokens" in _said(at)


def test_temperature_lab_typed_text_is_not_a_number():
    at = _open("app_pages/lab_temperature.py")
    at.text_input(key="temp_typed").set_value("warm").run()
    assert not at.exception
    assert "'warm' is not a number" in _said(at) and "Using the slider's T = 1" in _said(at)


def test_training_too_many_snapshots():
    at = _open("app_pages/training.py")
    at.number_input(key="tr_steps").set_value(5000)
    at.number_input(key="tr_every").set_value(1)
    at.button(key="tr_train").click().run()
    assert not at.exception
    assert "That would record 5001 snapshots; snapshot less often (at most 400)." in _said(at)
