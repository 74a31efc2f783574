"""AppTest: the app shell and the heatmap page run, and the widgets change the figures."""
import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import APP
from tests.figures import app_figures, decode


def _heatmap_z(at):
    for fig in app_figures(at):
        trace = fig["data"][0]
        if trace.get("type") == "heatmap" and fig["layout"].get("yaxis", {}).get("title", {}).get("text", "").startswith("query"):
            return decode(trace["z"]).astype(float)
    raise AssertionError("no head heatmap on the page")


@pytest.fixture
def heatmap():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("app_pages/heatmap.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_home_runs():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    assert any("attnviz" in t.value for t in at.title)


def test_heatmap_renders_default_sentence(heatmap):
    z = _heatmap_z(heatmap)
    n = len("The cat sat on the mat because it was tired .".split()) + 2
    assert z.shape == (n, n)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-4)


def test_changing_head_and_layer_changes_the_figure(heatmap):
    z0 = _heatmap_z(heatmap)
    heatmap.selectbox(key="hm_head").set_value(3).run()
    z1 = _heatmap_z(heatmap)
    assert not np.allclose(z0, z1)
    heatmap.selectbox(key="hm_layer").set_value(4).run()
    z2 = _heatmap_z(heatmap)
    assert not np.allclose(z1, z2)
    assert heatmap.session_state["layer"] == 4 and heatmap.session_state["head"] == 3


def test_hide_special_drops_rows_and_renormalises(heatmap):
    n = _heatmap_z(heatmap).shape[0]
    heatmap.toggle(key="hm_hide_special").set_value(True).run()
    z = _heatmap_z(heatmap)
    assert z.shape == (n - 2, n - 2)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-4)


def test_empty_text_gives_a_plain_message(heatmap):
    heatmap.text_area(key="text").set_value("   ").run()
    assert not heatmap.exception
    assert any("empty" in w.value for w in heatmap.warning)


def test_unknown_model_gives_a_plain_message(heatmap):
    heatmap.selectbox(key="model_choice").set_value("other").run()
    heatmap.text_input(key="custom_model").set_value("no-such-org/nothing").run()
    assert not heatmap.exception
    assert any("minilm" in w.value and "nothing" in w.value for w in heatmap.warning)


def test_sentence_pair_blocks(heatmap, minilm):
    """A block shows the model's own weights (no silent renormalising); hiding special tokens
    renormalises over every visible key and says so in the colour bar."""
    from attnviz.extract import extract

    heatmap.toggle(key="use_pair").set_value(True).run()
    heatmap.text_input(key="text_pair").set_value("It slept.").run()
    heatmap.radio(key="hm_block").set_value("B→A").run()
    z = _heatmap_z(heatmap)
    assert z.shape[0] == 4  # it, slept, ., [SEP]
    r = extract(minilm, heatmap.session_state["text"], "It slept.")
    a, b = np.flatnonzero(r.segment_ids == 0), np.flatnonzero(r.segment_ids == 1)
    np.testing.assert_allclose(z, r.attention[0, 0][np.ix_(b, a)], atol=1e-6)
    assert (z.sum(axis=1) < 0.999).all()
    heatmap.toggle(key="hm_hide_special").set_value(True).run()
    trace = next(f["data"][0] for f in app_figures(heatmap) if f["data"][0].get("type") == "heatmap"
                 and f["layout"].get("yaxis", {}).get("title", {}).get("text", "").startswith("query"))
    assert trace["colorbar"]["title"]["text"] == "renormalised weight"
    assert "renormalised weight" in trace["hovertemplate"]


def test_url_restores_the_view_without_widget_warnings():
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"layer": "4", "head": "7", "hm_renorm": "0", "hm_hide_special": "1",
                            "text": "Shared links work."})
    at.run()
    at.switch_page("app_pages/heatmap.py")
    at.run()
    assert not at.exception
    assert (at.session_state["layer"], at.session_state["head"]) == (4, 7)
    assert at.session_state["hm_renorm"] is False and at.session_state["hm_hide_special"] is True
    z = _heatmap_z(at)
    assert z.shape == (4, 4)  # shared links work . without [CLS]/[SEP]
    assert (z.sum(axis=1) < 1.0).all()  # not renormalised: special tokens' weight is missing
    assert not [w for w in at.warning if "Session State" in w.value]


def test_presentation_mode_hides_exports():
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["present"] = "1"
    at.run()
    at.switch_page("app_pages/heatmap.py")
    at.run()
    assert not at.exception and at.session_state["present"] is True
    labels = [b.label for b in at.get("download_button")]
    assert "CSV" not in labels


def test_text_view_shades_the_focus_row_and_column(minilm):
    """The shaded text carries the focus token's row (what it attends to) and column (who attends
    to it) of the chosen head, and follows the token and head widgets."""
    import re

    import numpy as np

    from attnviz.extract import extract
    from tests.app.apptest import open_page

    def weights(at):
        return [np.array([float(w) for w in re.findall(r'data-weight="([^"]+)"', h.proto.body)]) for h in at.get("html")
                if "attnviz-text" in h.proto.body]

    at = open_page("app_pages/heatmap.py")
    r = extract(minilm, at.session_state["text"])
    row, col = weights(at)
    np.testing.assert_allclose(row, r.attention[0, 0, 1], atol=1e-6)  # default: layer 0, head 0, token 1
    np.testing.assert_allclose(col, r.attention[0, 0, :, 1], atol=1e-6)
    at.selectbox(key="hm_focus_label").set_value(f"4: {r.tokens[4]}").run()
    at.session_state["layer"], at.session_state["head"] = 2, 5
    at.run()
    row, col = weights(at)
    np.testing.assert_allclose(row, r.attention[2, 5, 4], atol=1e-6)
    np.testing.assert_allclose(col, r.attention[2, 5, :, 4], atol=1e-6)
