"""AppTest: the Trust the view? page on the default MiniLM: runs, Run produces the figures and a verdict
naming a method, a new position gives new numbers, the toy model and bad settings get plain messages."""
from __future__ import annotations

import numpy as np
import pytest

from attnviz.attribution.importance import METHODS
from tests.app.apptest import open_page

PAGE = "app_pages/trust.py"


def _run(at, timeout=300):
    """Press Run, wait for the background job (AppTest has no timer for the page's poll), rerun."""
    at.button(key="trust_run").click().run()
    assert not at.exception, at.exception
    job = at.session_state["trust_job"][1]
    assert job.wait(timeout), "the attribution job did not finish"
    at.run()  # the poll's rerun: collects the report
    at.run()
    assert not at.exception, at.exception
    assert job.error is None, job.error
    return job.result


def _verdict(at) -> str:
    return next(s.value for s in at.success if s.value.startswith("For this input"))


@pytest.fixture(scope="module")
def at():
    return open_page(PAGE, text="The cat sat on the mat because it was tired.")


def test_page_runs_and_offers_the_encoder_targets(at):
    box = at.selectbox(key="trust_kind")
    assert box.options == ["Similarity to a second sentence (sentence embedding)",
                           "Similarity to this sentence with one token masked"]
    assert any("Press **Run**" in i.value for i in at.info)
    assert at.number_input(key="trust_steps").value == 32


def test_run_draws_the_figures_and_a_verdict(at):
    at.number_input(key="trust_steps").set_value(16).run()
    report = _run(at)
    verdict = _verdict(at)
    best = max(report.curves, key=lambda k: report.curves[k].comprehensiveness)
    assert verdict.startswith(f"For this input, {best} tracks the output best")
    assert any(name in verdict for name in METHODS)
    titles = [c.proto.spec for c in at.get("plotly_chart")]
    assert len(titles) == 5  # scores, Spearman, deletion, insertion, randomisation
    table = at.dataframe[0].value
    assert list(table["method"]) == list(METHODS)
    assert np.allclose(table["comprehensiveness ↑"], [round(report.curves[k].comprehensiveness, 4) for k in METHODS])


def test_a_new_position_gives_new_numbers(at):
    at.selectbox(key="trust_kind").set_value("similarity-masked").run()
    first = _run(at)
    assert first.target.position == 2
    at.selectbox(key="trust_pos_label").set_value("6: mat").run()
    assert any("Press **Run**" in i.value for i in at.info)  # the old report is not shown for new settings
    second = _run(at)
    assert second.target.position == 6 and "'mat' (position 6) masked" in second.target.label
    ig1, ig2 = first.scores["integrated gradients"], second.scores["integrated gradients"]
    assert not np.allclose(ig1, ig2, rtol=1e-3)
    assert first.f_input != pytest.approx(second.f_input, abs=1e-4)


def test_typed_steps_outside_the_range_are_refused_with_a_message_on_screen(at):
    box = at.number_input(key="trust_steps")
    assert (box.min, box.max) == (None, None)  # checked by the page: the browser would only say so on hover
    assert "cost grows linearly" in box.help
    box.set_value(10000).run()
    assert any("from 1 to 512 steps (it was 10000)" in w.value and w.value.endswith("Using 32.") for w in at.warning)
    assert at.number_input(key="trust_steps").value == 32


def test_a_link_with_10000_steps_falls_back_to_the_default():
    at = open_page(PAGE, query={"trust_steps": "10000", "trust_kind": "similarity-masked", "trust_pos": "3"})
    assert at.number_input(key="trust_steps").value == 32
    assert any("from 1 to 512 steps (it was 10000)" in w.value and "grows linearly" in w.value for w in at.warning)
    assert at.selectbox(key="trust_pos_label").value == "3: sat"


def test_a_link_naming_the_settings_tr_still_opens_them():
    at = open_page(PAGE, query={"tr_steps": "16", "tr_kind": "similarity-masked", "tr_pos": "3"})
    assert at.number_input(key="trust_steps").value == 16
    assert at.selectbox(key="trust_kind").value == "similarity-masked"
    assert at.selectbox(key="trust_pos_label").value == "3: sat"
    assert at.query_params["trust_steps"] == "16" and at.query_params["trust_pos"] == "3"  # written back
    assert not [name for name in at.query_params if name.startswith("tr_")]


def test_the_trained_toy_model_gets_a_plain_message():
    from attnviz.training.runs import load, recorded_runs

    at = open_page(PAGE, training_result=load(recorded_runs()["reverse"]).result(-1), model_choice="trained")
    assert any("needs a HuggingFace model" in i.value for i in at.info)
