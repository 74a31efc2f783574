"""AppTest for the head-analytics pages: they render, show the right numbers, and turn bad input into messages."""
import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import app_figures, decode

TEXT = "The cat sat on the mat because it was tired."


def _fig(at, i):
    return app_figures(at)[i]


def _open(page, **state):
    return open_page(page, text=TEXT, **state)


def _warnings(at):
    return " ".join(w.value for w in at.warning)


@pytest.fixture(scope="module")
def result(minilm):
    from attnviz.extract import extract

    return extract(minilm, TEXT)


def test_entropy_page_shows_head_means(result):
    from attnviz.metrics.entropy import head_entropy

    at = _open("app_pages/entropy.py")
    z = decode(_fig(at, 0)["data"][0]["z"])
    np.testing.assert_allclose(z, head_entropy(result)["head_normalised"], atol=1e-5)
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) == 72
    at.radio(key="en_unit").set_value("nats").run()
    z = decode(_fig(at, 0)["data"][0]["z"])
    np.testing.assert_allclose(z, head_entropy(result)["head_nats"], atol=1e-5)
    at.selectbox(key="en_layer").set_value(2).run()
    bars = decode(_fig(at, 1)["data"][0]["y"])
    np.testing.assert_allclose(bars, head_entropy(result)["nats"][2, 0], atol=1e-5)


def test_entropy_grid_frames_no_head_and_the_bars_name_theirs(result):
    """The grid frames no head (it used to frame the shared head while the bars showed another), so picking a head
    for the bars leaves the grid's figure as it was: nothing of it is built or sent again."""
    from attnviz.metrics.entropy import head_entropy

    at = _open("app_pages/entropy.py", layer=3, head=1)
    grid = _fig(at, 0)
    at.selectbox(key="en_layer").set_value(2).run()
    at.selectbox(key="en_head").set_value(5).run()
    assert not _fig(at, 0)["layout"].get("shapes") and _fig(at, 0) == grid
    assert _fig(at, 1)["layout"]["title"]["text"].endswith("layer 2, head 5")
    np.testing.assert_allclose(decode(_fig(at, 1)["data"][0]["y"]), head_entropy(result)["normalised"][2, 5], atol=1e-5)
    assert (at.session_state["layer"], at.session_state["head"]) == (3, 1)  # the shared head is left as it was


def test_rollout_page_and_bad_input(result):
    from attnviz.metrics.rollout import rollout

    at = _open("app_pages/rollout.py")
    assert len(at.get("plotly_chart")) == 4  # raw, rollout, contribution bars, rollout vs flow bars
    bars = decode(_fig(at, 2)["data"][0]["y"])
    np.testing.assert_allclose(bars, rollout(result.attention)[-1, 0], atol=1e-5)
    at.number_input(key="ro_discard").set_value(1.0).run()
    assert not at.exception and "discard ratio" in _warnings(at)
    at.number_input(key="ro_discard").set_value(0.2).run()
    assert not at.warning
    picker = at.selectbox(key="ro_target_label")
    assert picker.options == [f"{i}: {t}" for i, t in enumerate(result.tokens)]  # positions with their tokens
    picker.set_value(f"3: {result.tokens[3]}").run()
    assert at.session_state["ro_target"] == 3
    bars = decode(_fig(at, 2)["data"][0]["y"])
    np.testing.assert_allclose(bars, rollout(result.attention, discard_ratio=0.2)[-1, 3], atol=1e-5)


def test_rollout_page_attention_flow(result):
    """Flow bars for the target, the all-outputs matrix behind a toggle, and a plain message for
    inputs too long for max-flow."""
    from attnviz.metrics.flow import attention_flow, flow_shares
    from attnviz.metrics.rollout import fuse_heads, mixing_matrices, rollout

    mixes = mixing_matrices(fuse_heads(result.attention))
    expected = flow_shares(attention_flow(mixes, range(result.seq_len)))
    at = _open("app_pages/rollout.py")
    flow_fig = _fig(at, 3)
    assert [t["name"] for t in flow_fig["data"]] == ["rollout share", "flow share"]
    np.testing.assert_allclose(decode(flow_fig["data"][0]["y"]), rollout(result.attention)[-1, 0], atol=1e-5)
    np.testing.assert_allclose(decode(flow_fig["data"][1]["y"]), expected[0], atol=1e-6)
    at.selectbox(key="ro_target_label").set_value(f"4: {result.tokens[4]}").run()
    np.testing.assert_allclose(decode(_fig(at, 3)["data"][1]["y"]), expected[4], atol=1e-6)
    at.toggle(key="ro_flow_all").set_value(True).run()
    assert not at.exception and len(at.get("plotly_chart")) == 6
    np.testing.assert_allclose(decode(_fig(at, 5)["data"][0]["z"]), expected, atol=1e-4)  # rounded to 4 places
    at.slider(key="ro_layer").set_value(1).run()  # flow through the first two layers only
    two = flow_shares(attention_flow(mixes, range(result.seq_len), layer=1))
    np.testing.assert_allclose(decode(_fig(at, 5)["data"][0]["z"]), two, atol=1e-4)

    long = open_page("app_pages/rollout.py", text=" ".join(["word"] * 40))
    assert not long.exception and len(long.get("plotly_chart")) == 3
    assert "attention flow is offered up to 24" in " ".join(i.value for i in long.info)


def test_head_roles_page():
    at = _open("app_pages/head_roles.py")
    assert len(at.get("plotly_chart")) == 3  # role map, induction, duplicate-token
    assert "same column" in " ".join(i.value for i in at.info)  # [CLS] = first-token note
    at.radio(key="hr_scope").set_value("the current sentence").run()
    assert not at.exception
    assert "current sentence" in _fig(at, 0)["layout"]["title"]["text"]


def test_head_roles_induction_scores(minilm):
    """The induction and duplicate maps hold the mean weights from the second copy's words (read
    here by hand from extract's attention), averaged over the chosen number of random sequences."""
    from attnviz.extract import extract
    from attnviz.metrics.induction import repeated_text

    at = _open("app_pages/head_roles.py", hr_words=12, hr_seqs=2)
    figs = {f["layout"]["title"]["text"].split(" per head")[0]: f for f in app_figures(at)[1:]}
    by_hand_ind, by_hand_dup = [], []
    for seed in (0, 1):
        rt = repeated_text(minilm.tokenizer, 12, seed)
        r = extract(minilm, rt.text)
        a = np.asarray(r.attention, dtype=np.float64)  # [CLS] w1..w12 w1..w12 [SEP]
        by_hand_ind.append(np.mean([a[:, :, 13 + k, 2 + k] for k in range(11)], axis=0))
        by_hand_dup.append(np.mean([a[:, :, 13 + k, 1 + k] for k in range(12)], axis=0))
    np.testing.assert_allclose(decode(figs["Induction score"]["data"][0]["z"]), np.mean(by_hand_ind, axis=0),
                               atol=1e-5)
    np.testing.assert_allclose(decode(figs["Duplicate-token score"]["data"][0]["z"]), np.mean(by_hand_dup, axis=0),
                               atol=1e-5)
    at.slider(key="hr_seqs").set_value(1).run()
    np.testing.assert_allclose(decode(app_figures(at)[1]["data"][0]["z"]), by_hand_ind[0], atol=1e-5)


def test_head_roles_strongest_pairs_across_examples(minilm):
    """The table's first weight is the largest non-special weight of the head over every example
    sentence (found here by brute force), and the previous-token head L0 H2 is read as offset -1."""
    from attnviz.examples import examples
    from attnviz.extract import extract

    at = _open("app_pages/head_roles.py", hr_pairs_layer=0, hr_pairs_head=2)
    table = at.dataframe[-2].value if len(at.dataframe) > 1 else at.dataframe[0].value
    best = 0.0
    for a, b in examples():
        r = extract(minilm, a, b)
        keep = ~np.asarray(r.special_mask)
        best = max(best, float(r.attention[0, 2][np.ix_(keep, keep)].max()))
    assert table["weight"].iloc[0] == pytest.approx(best, abs=1e-4)
    assert len(table) == 20 and (table["offset"] == -1).sum() >= 15
    assert "(offset -1)" in " ".join(m.value for m in at.markdown)
    at.toggle(key="hr_pairs_special").set_value(False).run()
    with_special = at.dataframe[-2].value if len(at.dataframe) > 1 else at.dataframe[0].value
    assert with_special["weight"].iloc[0] >= table["weight"].iloc[0]


def test_ablation_page_effect_and_bad_input():
    at = _open("app_pages/ablation.py", ablated_by_model={"minilm": {(0, 2)}})
    assert not at.warning
    assert len(at.metric) >= 1 and float(at.metric[0].value) > 0
    line = decode(_fig(at, 0)["data"][0]["y"])
    assert line[0] == pytest.approx(0, abs=1e-6) and line[1:].min() > 0
    at.session_state["ablated_by_model"] = {"minilm": {(l, h) for l in range(6) for h in range(12)}}
    at.run()
    assert not at.exception and "every head" in _warnings(at)


def test_ablated_heads_belong_to_their_model():
    """Heads switched off on one model stay off for it, and are not switched off on another."""
    at = _open("app_pages/ablation.py")
    at.multiselect(key="ab_heads").set_value(["L1 H0"]).run()
    assert at.session_state["ablated_by_model"] == {"minilm": {(1, 0)}}
    at.session_state["model_choice"] = "other"
    at.session_state["custom_model"] = "a-model-that-is-not-here"
    at.run()
    assert not at.exception
    at.session_state["model_choice"] = "minilm"
    at.run()
    assert at.multiselect(key="ab_heads").value == ["L1 H0"]


def test_ablation_link_restores_heads():
    at = open_page("app_pages/ablation.py", query={"ab_heads": "L0 H2,L3 H5,L9 H9"}, text=TEXT)
    assert at.multiselect(key="ab_heads").value == ["L0 H2", "L3 H5"]  # L9 H9 does not exist here
    assert at.session_state["ablated_by_model"]["minilm"] == {(0, 2), (3, 5)}


def test_compare_page_and_different_lengths():
    at = _open("app_pages/compare.py")
    assert len(at.get("plotly_chart")) == 4
    diff = decode(_fig(at, 2)["data"][0]["z"])
    assert np.abs(diff).max() > 0
    at.text_input(key="cmp_text_b").set_value("The dog sat on the mat because it was very tired.").run()
    assert not at.exception and "different lengths" in _warnings(at)
    at.text_input(key="cmp_text_b").set_value(TEXT).run()
    diff = decode(_fig(at, 2)["data"][0]["z"])
    assert np.abs(diff).max() == 0


def test_compare_long_text_is_cut_and_copied_into_b(minilm):
    """A 512-token text is shown cut (not as a wall of text); 'Copy A into B' makes B the same text
    (a zero difference), and swapping one word of the copy gives a non-zero one."""
    from attnviz.examples import long_text

    text = long_text()[:3000]
    at = open_page("app_pages/compare.py", text=text)
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown if m.value.startswith("**A**"))
    assert "512 tokens" in shown and len(shown) < 400
    at.button(key="cmp_copy_a").click().run()
    assert at.text_input(key="cmp_text_b").value == text
    diff = decode(_fig(at, 2)["data"][0]["z"])
    assert diff.shape[0] > 100 and np.abs(diff).max() == 0.0
    top_a, top_b = (_fig(at, i)["data"][0]["zmax"] for i in (0, 1))
    assert top_a == top_b < 0.5  # one colour scale, clipped below the sink weights (not 0..1: blank)
    at.text_input(key="cmp_text_b").set_value(text.replace("cat", "dog", 1)).run()
    assert not at.warning and np.abs(decode(_fig(at, 2)["data"][0]["z"])).max() > 1e-3
