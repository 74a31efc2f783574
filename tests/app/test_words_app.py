"""AppTest: the sidebar's Word level switch merges word pieces on the heatmap, entropy, rollout and
head-role pages (the numbers equal attnviz.words on the same result) and the other pages say they
show pieces."""
import numpy as np
import pytest

from attnviz.extract import extract
from attnviz.models import load_model
from attnviz.words.merge import merge_words
from tests.app.apptest import open_page
from tests.figures import app_figures, decode

TEXT = "Tokenization of unbelievably long words."


def _head_z(at):
    for fig in app_figures(at):
        trace = fig["data"][0]
        if trace.get("type") == "heatmap" and fig["layout"].get("yaxis", {}).get("title", {}).get("text", "").startswith("query"):
            return decode(trace["z"]).astype(float), fig["layout"]
    raise AssertionError("no head heatmap on the page")


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_heatmap_at_word_level_equals_the_merged_result():
    at = open_page("app_pages/heatmap.py", text=TEXT, layer=3, head=4)
    pieces, _ = _head_z(at)
    at.toggle(key="words").set_value(True).run()
    assert not at.exception
    words, layout = _head_z(at)
    expected = merge_words(extract(load_model("minilm"), TEXT))
    assert words.shape == (expected.seq_len, expected.seq_len) and pieces.shape[0] > words.shape[0]
    np.testing.assert_allclose(words, expected.attention[3, 4], atol=1e-6)
    np.testing.assert_allclose(words.sum(1), 1.0, atol=1e-5)
    assert "unbelievably" in str(layout["xaxis"].get("ticktext", "")) + str(layout["xaxis"].get("tickvals", "")) \
        or "unbelievably" in str(at.get("plotly_chart")[1].proto.spec)
    assert f"{extract(load_model('minilm'), TEXT).seq_len} tokens merged into {expected.seq_len} words" in _captions(at)
    assert at.query_params.get("words") in ("1", ["1"])


@pytest.mark.parametrize("page", ["app_pages/entropy.py", "app_pages/rollout.py", "app_pages/head_roles.py"])
def test_analysis_pages_run_at_word_level(page):
    at = open_page(page, text=TEXT, words=True)
    assert not at.exception
    assert "merged into" in _captions(at)
    before = [f["data"] for f in app_figures(at)]
    at.toggle(key="words").set_value(False).run()
    assert not at.exception and "merged into" not in _captions(at)
    assert [f["data"] for f in app_figures(at)] != before  # the figures change with the switch


def test_pages_that_show_pieces_say_so():
    at = open_page("app_pages/query_key.py", text=TEXT, words=True)
    assert not at.exception
    assert "This page shows word pieces" in _captions(at)


def test_the_sidebar_controls_are_greyed_on_pages_that_do_not_read_them_and_keep_their_values():
    at = open_page("app_pages/query_key.py", text=TEXT, words=True, lens="ALTI")
    assert at.toggle(key="words").disabled and at.radio(key="lens").disabled
    assert at.toggle(key="words").value is True and at.radio(key="lens").value == "ALTI"
    assert "Not used on this page" in at.radio(key="lens").help
    at.switch_page("app_pages/generate.py").run()  # the generated text's shading reads Show, not Word level
    assert not at.exception, at.exception
    assert not at.radio(key="lens").disabled and at.toggle(key="words").disabled
    at.switch_page("app_pages/heatmap.py").run()
    assert not at.exception, at.exception
    assert not at.toggle(key="words").disabled and not at.radio(key="lens").disabled
    assert at.toggle(key="words").value is True and at.radio(key="lens").value == "ALTI"
    assert "merged into" in _captions(at)
