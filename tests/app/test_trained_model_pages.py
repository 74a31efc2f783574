"""AppTest: a trained toy model stored by the training page feeds the inspection pages."""
import numpy as np
import pytest

from attnviz.training.runs import load, recorded_runs
from tests.app.apptest import open_page
from tests.figures import app_figures, decode


@pytest.fixture(scope="module")
def reverse_result():
    return load(recorded_runs()["reverse"]).result(-1)


def _open(page, result):
    return open_page(page, training_result=result, model_choice="trained")


def test_heatmap_shows_the_trained_model(reverse_result):
    at = _open("app_pages/heatmap.py", reverse_result)
    assert len(at.radio(key="hm_stack").options) == 3  # encoder self, decoder self, cross
    at.radio(key="hm_stack").set_value("cross").run()
    figs = [f for f in app_figures(at) if f["data"][0].get("type") == "heatmap"
            and f["layout"].get("yaxis", {}).get("title", {}).get("text", "").startswith("query")]
    z = decode(figs[0]["data"][0]["z"]).astype(float)
    cross = reverse_result.cross_attention[0, 0]
    np.testing.assert_allclose(z, cross, atol=1e-6)


@pytest.mark.parametrize("page", ["app_pages/entropy.py", "app_pages/rollout.py", "app_pages/head_roles.py"])
def test_analysis_pages_run_on_the_trained_model(reverse_result, page):
    at = _open(page, reverse_result)
    assert not [w for w in at.warning if "empty" in w.value]
    if page == "app_pages/head_roles.py":  # induction needs new input: said plainly, no figures for it
        assert any("HuggingFace model" in i.value for i in at.info)
        assert len(at.get("plotly_chart")) == 1


@pytest.mark.parametrize("page", ["app_pages/ablation.py", "app_pages/compare.py", "app_pages/query_key.py"])
def test_pages_that_need_a_hf_model_say_so(reverse_result, page):
    at = _open(page, reverse_result)
    assert any("HuggingFace model" in i.value for i in at.info)
