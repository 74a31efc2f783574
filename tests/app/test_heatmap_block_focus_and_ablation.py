"""The heatmap page says what it shows: a sentence-pair block's title and numbers describe the block,
hidden special tokens are hidden in the token focus too, and ablation marks are explained beside the
figures that draw them (heatmap grid, token focus, Compare's head grid)."""
import re

import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import app_figures, decode

TEXT = "The cat sat on the mat because it was tired."
PAIR = "It slept."


@pytest.fixture(scope="module")
def pair_result(minilm):
    from attnviz.extract import extract

    return extract(minilm, TEXT, PAIR)


def test_a_pair_block_has_the_blocks_title_and_numbers(pair_result):
    at = open_page("app_pages/heatmap.py", layer=2, head=5, use_pair=True, text_pair=PAIR)
    at.radio(key="hm_block").set_value("A→B").run()
    assert not at.exception, at.exception
    assert any(s.value == "Layer 2, head 5 · block sentence A → sentence B" for s in at.subheader), \
        [s.value for s in at.subheader]
    seg = pair_result.segment_ids
    a, b = np.flatnonzero(seg == 0), np.flatnonzero(seg == 1)
    block = pair_result.attention[2, 5][np.ix_(a, b)].astype(np.float64)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["A→B: mean weight"] == f"{block.sum(axis=1).mean():.1%}"
    assert metrics["A→B: largest weight"] == f"{block.max():.4f}"
    assert not any("special tokens" in label or label == "Largest weight" for label in metrics), metrics
    at.radio(key="hm_block").set_value("all").run()  # the whole head again: the whole head's numbers
    metrics = {m.label: m.value for m in at.metric}
    full = pair_result.attention[2, 5]
    assert metrics["Largest weight"] == f"{float(full.max()):.4f}"
    assert any(s.value == "Layer 2, head 5" for s in at.subheader)


def _focus(at, direction: str) -> dict:
    start = "what 'cat' attends to" if direction == "out" else "what attends to 'cat'"
    return next(f for f in app_figures(at) if f["layout"].get("title", {}).get("text", "").startswith(start))


def _shaded(at) -> list[np.ndarray]:
    return [np.array([float(w) for w in re.findall(r'data-weight="([^"]+)"', h.proto.body)])
            for h in at.get("html") if "attnviz-text" in h.proto.body]


def test_hiding_special_tokens_hides_them_in_the_token_focus(minilm):
    from attnviz.extract import extract

    r = extract(minilm, TEXT)
    at = open_page("app_pages/heatmap.py", layer=1, head=4, hm_focus=2)
    assert at.selectbox(key="hm_focus_label").value == "2: cat"  # the focus token is 'cat' below
    at.toggle(key="hm_hide_special").set_value(True).run()
    assert not at.exception, at.exception
    words = np.flatnonzero(~r.special_mask)  # positions 1 .. n-2
    labels = [f"{i}: {r.tokens[i]}" for i in words]
    a = r.attention[1].astype(np.float64)  # (head, query, key)
    visible = a[:, words][:, :, words]  # (head, word query, word key)
    out, col = _focus(at, "out"), _focus(at, "in")
    assert out["data"][0]["x"] == labels and col["data"][0]["x"] == labels
    assert "special tokens hidden, renormalised" in out["layout"]["title"]["text"]
    expected_out = a[:, 2, words] / a[:, 2, words].sum(axis=1, keepdims=True)
    expected_in = visible[:, :, 1] / visible.sum(axis=2)  # 'cat' is the second word
    np.testing.assert_allclose(decode(out["data"][0]["z"]), expected_out, atol=1e-6)
    np.testing.assert_allclose(decode(col["data"][0]["z"]), expected_in, atol=1e-6)
    row, column = _shaded(at)
    np.testing.assert_allclose(row, expected_out[4], atol=1e-6)  # the shaded text shows head 4
    np.testing.assert_allclose(column, expected_in[4], atol=1e-6)
    assert at.selectbox(key="hm_focus_label").options == labels  # hidden tokens cannot be picked
    at.toggle(key="hm_renorm").set_value(False).run()  # not renormalised: the model's own weights
    np.testing.assert_allclose(decode(_focus(at, "out")["data"][0]["z"]), a[:, 2, words], atol=1e-6)
    at.toggle(key="hm_hide_special").set_value(False).run()
    assert _focus(at, "out")["data"][0]["x"][0] == "0: [CLS]"


ABLATED = {"minilm": {(0, 3), (2, 5)}}


def test_ablation_marks_on_the_heatmap_are_explained():
    at = open_page("app_pages/heatmap.py", layer=2, head=1, ablated_by_model=ABLATED)
    notes = [c.value for c in at.caption if "switched off on the **Ablation** page" in c.value]
    assert any(n.startswith("Grey frames mark") and "(L0 H3, L2 H5)" in n for n in notes), notes
    assert any(n.startswith("A ✂ after a head's name marks") and "(L2 H5)" in n for n in notes), notes
    at.selectbox(key="hm_layer").set_value(1).run()  # no ablated head in layer 1: no ✂, no note for it
    notes = [c.value for c in at.caption if "switched off on the **Ablation** page" in c.value]
    assert len(notes) == 1 and notes[0].startswith("Grey frames mark")


def test_no_ablation_no_note():
    at = open_page("app_pages/heatmap.py")
    assert not [c.value for c in at.caption if "Ablation" in c.value]


def test_ablation_marks_on_compare_are_explained():
    at = open_page("app_pages/compare.py", ablated_by_model=ABLATED)
    grid = next(f for f in app_figures(at) if f["layout"]["title"]["text"].startswith("Difference per head"))
    assert any(t.get("name") == "ablated" for t in grid["data"])  # the red crosses are drawn
    notes = [c.value for c in at.caption if "switched off on the **Ablation** page" in c.value]
    assert len(notes) == 1 and notes[0].startswith("Red crosses mark") and "(L0 H3, L2 H5)" in notes[0], notes
