"""AppTest: the lens (sidebar Show) changes what the views draw, and the Contributions and lesson pages
show numbers computed from the model."""
from __future__ import annotations

import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import decode as as_array

TEXT = "The cat sat on the mat because it was tired."


def _figure(at, key_part: str):
    import json

    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if key_part in (chart.proto.id or "") or key_part in json.dumps(spec.get("layout", {}).get("title", "")):
            return spec
    raise AssertionError(f"no figure {key_part!r}")


def _focus_z(at):
    spec = _figure(at, "what")  # the token focus figure's title says what the token attends to
    return as_array(spec["data"][0]["z"]).astype(float), spec["data"][0]["colorbar"]["title"]["text"]


@pytest.mark.parametrize("quantity,label", [("value-weighted", "value-weighted share"), ("ALTI", "ALTI contribution")])
def test_lens_recolours_the_heatmap_page_and_labels_it(quantity, label):
    plain = open_page("app_pages/heatmap.py", text=TEXT)
    lensed = open_page("app_pages/heatmap.py", text=TEXT, lens=quantity)
    z0, t0 = _focus_z(plain)
    z1, t1 = _focus_z(lensed)
    assert t0 == "weight" and t1 == label
    assert any("Showing" in i.value and "not attention weights" in i.value for i in lensed.info)
    if quantity == "ALTI":
        assert z1.shape[0] == 1  # one map per layer: heads summed
    else:
        assert z1.shape == z0.shape and not np.allclose(z0, z1, atol=1e-3)
    np.testing.assert_allclose(z1.sum(axis=-1), 1.0, atol=1e-3)  # rows of shares still sum to 1
    assert any(label in m.label for m in lensed.metric)


def test_lens_reaches_entropy_and_rollout():
    for page, state in (("app_pages/entropy.py", {}), ("app_pages/rollout.py", {}),
                        ("app_pages/head_roles.py", {"hr_scope": "the current sentence"})):  # its averaged map: weights
        at = open_page(page, text=TEXT, lens="ALTI", **state)
        assert any("ALTI" in i.value for i in at.info), page
    a = open_page("app_pages/entropy.py", text=TEXT)
    b = open_page("app_pages/entropy.py", text=TEXT, lens="value-weighted")
    za = as_array(_figure(a, "entropy")["data"][0]["z"]).astype(float)
    zb = as_array(_figure(b, "entropy")["data"][0]["z"]).astype(float)
    assert za.shape == zb.shape and not np.allclose(za, zb, atol=1e-3)


def test_views_of_summed_heads_name_them_so():
    """ALTI has one map per layer: the heatmap's grid and token focus, the entropy page's picker, grid, bars and
    table, the head roles' map and the rollout's fusion control say the heads are summed; none names a head 0."""
    from attnviz.types import SUMMED
    from attnviz.ui.heads import SUMMED as BOX
    from tests.figures import app_figures

    hm = open_page("app_pages/heatmap.py", text=TEXT, lens="ALTI")
    grid = next(f for f in app_figures(hm) if f["data"][0]["type"] == "image")
    assert grid["layout"]["xaxis"]["title"]["text"] == SUMMED and set(grid["layout"]["xaxis"]["ticktext"]) == {""}
    assert all(t.startswith(f"layer {i}, {SUMMED}") for i, t in enumerate(grid["data"][1]["hovertext"]))
    focus = _figure(hm, "what")
    assert focus["layout"]["yaxis"]["ticktext"] == [SUMMED] and focus["data"][0]["hovertemplate"].startswith(SUMMED)
    assert any("in this layer's one map (its heads summed)" in m.value for m in hm.markdown)
    assert any("One thumbnail per layer" in m.value for m in hm.markdown)
    assert "Every layer, its heads summed" in [h.value for h in hm.subheader]

    en = open_page("app_pages/entropy.py", text=TEXT, lens="ALTI", layer=3, head=5)
    box = en.selectbox(key="en_head_summed")
    assert box.disabled and box.value == BOX
    assert _figure(en, "per query token")["layout"]["title"]["text"].endswith(f"layer 3, {SUMMED}")
    en_grid = _figure(en, "Mean")
    assert en_grid["layout"]["xaxis"]["title"]["text"] == SUMMED and "per layer, heads summed" in en_grid["layout"]["title"]["text"]
    assert set(en.dataframe[0].value["head"]) == {SUMMED} and len(en.dataframe[0].value) == 6
    assert "ablated" not in en.dataframe[0].value.columns  # a layer's summed heads are not switched off one by one
    assert en.button(key="en_open").label == "Open this layer on the heatmap page"

    hr = open_page("app_pages/head_roles.py", text=TEXT, lens="ALTI", hr_scope="the current sentence")
    roles = _figure(hr, "Strongest role")
    assert roles["layout"]["xaxis"]["title"]["text"] == SUMMED
    assert all(f", {SUMMED}: " in t for t in roles["data"][1]["hovertext"])
    assert any("best score of the layer's heads summed" in c.value and "open that layer" in c.value for c in hr.caption)
    assert any("Showing ALTI contributions" in i.value for i in hr.info)
    hr.radio(key="hr_scope").set_value(hr.radio(key="hr_scope").options[0]).run()  # averaged: scored from weights
    assert not hr.exception, hr.exception
    assert not any("Showing ALTI contributions" in i.value for i in hr.info)
    assert any("Averaged scores are computed from attention weights" in c.value for c in hr.caption)
    assert _figure(hr, "Strongest role")["layout"]["xaxis"]["title"]["text"] != SUMMED

    ro = open_page("app_pages/rollout.py", text=TEXT, lens="ALTI", ro_fusion="max")
    fusion = ro.selectbox(key="ro_fusion_summed")
    assert fusion.disabled and fusion.value == SUMMED
    assert ro.session_state["ro_fusion"] == "max"  # kept for the other lenses
    raw = _figure(ro, "ALTI contributions, layer")
    assert raw["data"][0]["colorbar"]["title"]["text"] == "ALTI contribution"
    assert "ALTI contribution: " in raw["data"][0]["hovertemplate"]
    assert "keeps at least w of itself" in " ".join(c.value for c in ro.caption)  # one map: nothing fused by max


def test_rollout_names_the_lens_and_what_max_fusion_keeps():
    vw = open_page("app_pages/rollout.py", text=TEXT, lens="value-weighted", ro_fusion="max")
    raw = _figure(vw, "Value-weighted attention, layer")
    assert raw["data"][0]["colorbar"]["title"]["text"] == "value-weighted share"
    assert "(max of heads)" in raw["layout"]["title"]["text"]
    captions = " ".join(c.value for c in vw.caption)
    assert "can keep less than w" in captions and "keeps at least w" not in captions
    vw.selectbox(key="ro_fusion").set_value("mean").run()
    assert "keeps at least w of itself" in " ".join(c.value for c in vw.caption)


def test_weights_only_pages_say_the_lens_does_not_apply():
    at = open_page("app_pages/query_key.py", text=TEXT, lens="ALTI")
    assert any("This page shows attention weights" in c.value for c in at.caption)


def test_lens_on_an_uncovered_model_falls_back_with_a_plain_message(monkeypatch):
    from attnviz.contrib import parts
    from tests.tiny_models import tiny_loaded

    gpt2, covered = tiny_loaded("gpt2").model, parts.family_of
    monkeypatch.setattr(parts, "family_of", lambda model: covered(gpt2))  # every model refused as GPT-2 is
    at = open_page("app_pages/heatmap.py", text="A different sentence for an uncached run.", lens="ALTI")
    assert any("Showing attention weights instead" in i.value for i in at.info)
    assert not at.exception


def test_contributions_page_numbers_come_from_the_model(minilm):
    from attnviz.contrib.compute import contributions

    at = open_page("app_pages/contributions.py", text=TEXT)
    metrics = {m.label: m.value for m in at.metric}
    c = contributions(minilm, TEXT)
    import attnviz.extract as ex

    special = np.asarray(ex.extract(minilm, TEXT).special_mask, dtype=bool)
    means = c.mean_mixing(~special)
    assert metrics["weights"] == f"{means['weights']:.0%}"
    assert metrics["+ residual + LN"] == f"{means['+ residual + LayerNorm']:.0%}"
    assert means["weights"] > means["value-weighted"] > means["+ residual"]
    # the head's strongest token: its weight, and the value-weighted share of it in points and as itself
    from attnviz.contrib import summary

    got = summary.received(ex.extract(minilm, TEXT).attention, c, 0, 0)
    top = int(np.argmax(got["attention weight"]))
    w, v = got["attention weight"][top], got["value-weighted share"][top]
    (metric,) = [m for m in at.metric if m.label.startswith("Weight on")]
    assert metric.value == f"{w:.1%}" and metric.delta == f"{100 * (v - w):+.1f} points: {v:.1%} value-weighted"
    # the toggle changes the average
    at.toggle(key="ct_words").set_value(False).run()
    metrics_all = {m.label: m.value for m in at.metric}
    assert metrics_all["weights"] == f"{c.mean_mixing()['weights']:.0%}"
    # another output token changes the sources figure
    before = as_array(_figure(at, "Layer")["data"][0]["y"])
    at.selectbox(key="ct_query_label").set_value(at.selectbox(key="ct_query_label").options[4]).run()
    after = as_array(_figure(at, "Layer")["data"][0]["y"])
    assert not np.allclose(before, after)


def test_lesson_page_reports_the_stripe(minilm):
    from attnviz.contrib import summary
    from attnviz.contrib.compute import contributions
    from attnviz.examples import examples
    from attnviz.extract import extract

    at = open_page("app_pages/lab_explanation.py")
    text = examples()[0][0]
    r, c = extract(minilm, text), contributions(minilm, text)
    w, v = summary.stripe(r.attention, c, 0)
    l, h = np.unravel_index(int(np.argmax(w)), w.shape)
    body = " ".join(m.value for m in at.markdown)
    assert f"layer {l}, head {h}" in body and f"{w[l, h]:.0%}" in body and f"{v[l, h]:.0%}" in body
    assert v[l, h] < 0.5 * w[l, h]  # the stripe carries far less than its weight
    assert at.title[0].value.startswith("9 ·")


def test_toy_model_without_weights_keeps_the_weights():
    from attnviz.training.runs import load, recorded_runs

    run = load(recorded_runs()["reverse"])
    at = open_page("app_pages/heatmap.py", training_result=run.result(0), model_choice="trained",
                   training_contributions=None, lens="ALTI")
    assert any("keeps only the final step" in i.value and "Showing attention weights instead" in i.value
               for i in at.info)
    z, title = _focus_z(at)
    assert title == "weight"


def test_toy_model_final_step_goes_through_the_lens():
    from attnviz.contrib.compute import run_contributions
    from attnviz.training.runs import load, recorded_runs

    run = load(recorded_runs()["reverse"])
    c = run_contributions(run, run.n_frames - 1)
    if c is None:
        pytest.skip("the recorded run has no final weights")
    assert run_contributions(run, 0) is None  # an earlier step: its weights are not kept
    at = open_page("app_pages/heatmap.py", training_result=run.result(-1), model_choice="trained",
                   training_contributions=c, lens="value-weighted")
    z, title = _focus_z(at)
    assert title == "value-weighted share"
    np.testing.assert_allclose(z.sum(axis=-1), 1.0, atol=1e-3)
