"""AppTest for the query · key page: its numbers equal the extracted attention and follow the widgets."""
import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import app_figures, decode

TEXT = "The cat sat on the mat because it was tired."
PAGE = "app_pages/query_key.py"


def _figure(at, title_part: str) -> dict:
    figs = [f for f in app_figures(at) if title_part in ((f["layout"].get("title") or {}).get("text") or "")]
    assert len(figs) == 1, [((f["layout"].get("title") or {}).get("text")) for f in app_figures(at)]
    return figs[0]


def _softmax_y(at):
    return decode(_figure(at, "Softmax of the scores")["data"][0]["y"]).astype(float)


@pytest.fixture(scope="module")
def result(minilm):
    from attnviz.extract import extract

    return extract(minilm, TEXT)


def test_page_shows_the_extracted_row_and_follows_the_widgets(result, minilm):
    from attnviz.query_key.qk import query_key

    at = open_page(PAGE, text=TEXT, layer=0, head=0)
    assert not at.warning, [w.value for w in at.warning]
    query = at.selectbox(key="qk_query").value
    assert query == 10  # last word "tired" of [CLS] the cat sat on the mat because it was tired . [SEP]
    np.testing.assert_allclose(_softmax_y(at), result.attention[0, 0, query], atol=1e-5)

    at.selectbox(key="qk_head").set_value(7).run()
    at.selectbox(key="qk_layer").set_value(4).run()
    at.selectbox(key="qk_query").set_value(3).run()
    assert not at.exception
    np.testing.assert_allclose(_softmax_y(at), result.attention[4, 7, 3], atol=1e-5)
    assert (at.session_state["layer"], at.session_state["head"]) == (4, 7)  # shared with the heatmap page

    # the scores are q·k / √32 by hand; the products matrix rows sum to q·k
    qk = query_key(minilm, TEXT)
    q, k = qk.query[4, 7, 3].astype(float), qk.key[4, 7].astype(float)
    scores = decode(_figure(at, "Scores q·k")["data"][0]["y"]).astype(float)
    np.testing.assert_allclose(scores, k @ q / np.sqrt(32), atol=1e-4)
    prod = decode(_figure(at, "Products q_d")["data"][0]["z"]).astype(float)
    assert prod.shape == (result.seq_len, 32)  # 13 keys <= 24: all shown
    np.testing.assert_allclose(prod.sum(axis=1), k @ q, atol=1e-4)

    # one key in detail: sorted bars are that key's products, largest first
    at.selectbox(key="qk_key").set_value(5).run()
    bars = decode(_figure(at, "and key")["data"][0]["y"]).astype(float)
    np.testing.assert_allclose(bars, np.sort(q * k[5])[::-1], atol=1e-5)


def test_head_from_another_page_and_url_carry_over(result):
    at = open_page(PAGE, text=TEXT, layer=2, head=5)
    assert (at.selectbox(key="qk_layer").value, at.selectbox(key="qk_head").value) == (2, 5)
    np.testing.assert_allclose(_softmax_y(at), result.attention[2, 5, 10], atol=1e-5)
    at = open_page(PAGE, query={"qk_layer": "3", "qk_head": "9", "qk_query": "2"}, text=TEXT)
    np.testing.assert_allclose(_softmax_y(at), result.attention[3, 9, 2], atol=1e-5)


def test_512_tokens_shows_only_the_top_keys(minilm):
    from attnviz.examples import long_text
    from attnviz.extract import extract

    at = open_page(PAGE, text=long_text(), layer=1, head=2)
    assert not at.warning, [w.value for w in at.warning]
    r = extract(minilm, long_text())
    assert r.seq_len == 512
    query = at.selectbox(key="qk_query").value
    row = r.attention[1, 2, query]
    np.testing.assert_allclose(_softmax_y(at), row, atol=1e-5)
    prod = _figure(at, "Products q_d")
    z = decode(prod["data"][0]["z"])
    assert z.shape == (24, 32)
    top = np.sort(np.argsort(-row)[:24])
    ticks = prod["layout"]["yaxis"]["ticktext"]
    assert ticks[0].startswith(f"{top[0]}: ") and ticks[-1].startswith(f"{top[-1]}: ")
    assert any("24 of 512" in c.value for c in at.caption)
    at.select_slider(key="qk_topk").set_value(8).run()
    assert decode(_figure(at, "Products q_d")["data"][0]["z"]).shape == (8, 32)
    total = sum(len(el.proto.spec) for el in at.get("plotly_chart"))
    assert total < 400_000  # no megabytes per page


def test_a_text_shorter_than_the_key_count_says_every_key_is_shown(result):
    at = open_page(PAGE, text=TEXT)
    n = result.seq_len
    assert n < 24 == at.select_slider(key="qk_topk").value
    assert decode(_figure(at, "Products q_d")["data"][0]["z"]).shape[0] == n
    assert any(f"All **{n}** visible keys are shown: the text has fewer than 24." == c.value for c in at.caption)
    at.select_slider(key="qk_topk").set_value(8).run()
    assert not any("visible keys are shown" in c.value for c in at.caption)
    assert any(f"8 of {n}" in c.value for c in at.caption)


def test_t5_folder_gives_the_plain_message(tmp_path):
    """A tiny T5 (relative position bias) saved as a folder and opened through "Other"."""
    from tests.tiny_models import build

    model, tok, _ = build("t5")
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    at = open_page(PAGE, text=TEXT, model_choice="other", custom_model=str(tmp_path))
    text = " ".join(w.value for w in at.warning)
    assert "plain scaled dot products" in text and "'t5'" in text
    assert not at.get("plotly_chart")


def test_a_view_shown_again_reuses_its_figures_and_another_query_gets_its_own(result):
    """The page's figures are shared (ui.cache.figure): the same view again (a slide shown again, another visitor of
    the same link) builds none of them; another query token builds those that show it."""
    at = open_page(PAGE, text=TEXT, layer=0, head=0)

    def shown():
        return {k: v[1] for k, v in at.session_state["_page_figures"].items()}

    first = shown()
    assert set(first) == {"qk_scores", "qk_softmax", "qk_q", "qk_keys", "qk_products", "qk_dims"}
    at.run()
    assert not at.exception
    assert all(fig is first[k] for k, fig in shown().items())
    at.selectbox(key="qk_query").set_value(3).run()
    moved = shown()
    assert all(moved[k] is not first[k] for k in ("qk_scores", "qk_softmax", "qk_q", "qk_products", "qk_dims"))
    np.testing.assert_allclose(_softmax_y(at), result.attention[0, 0, 3], atol=1e-5)
