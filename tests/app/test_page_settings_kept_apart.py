"""AppTest: a page's settings stay its own when the visitor moves between pages: the integrated-gradient
steps and output position of Trust the view? and the training steps and positional encoding of Training
evolution are separate settings."""
from __future__ import annotations

from attnviz.training.record import RECORDED
from attnviz.training.trainer import DEFAULT_MODELS
from tests.app.apptest import open_page

STEPS, POSITIONAL = RECORDED["reverse"].steps, DEFAULT_MODELS["reverse"]["positional"]  # the toy task's defaults


def test_trust_settings_leave_training_at_its_defaults():
    at = open_page("app_pages/trust.py", text="The cat sat on the mat because it was tired.")
    at.number_input(key="trust_steps").set_value(1).run()
    at.selectbox(key="trust_kind").set_value("similarity-masked").run()
    at.selectbox(key="trust_pos_label").set_value("6: mat").run()
    assert not at.exception
    at.switch_page("app_pages/training.py").run()
    assert not at.exception, at.exception
    assert (at.number_input(key="tr_steps").value, at.session_state["tr_pos"]) == (STEPS, POSITIONAL) == (150, "learned")
    at.switch_page("app_pages/trust.py").run()
    assert at.number_input(key="trust_steps").value == 1  # and Trust keeps its own
    assert at.selectbox(key="trust_pos_label").value == "6: mat"


def test_training_settings_leave_trust_at_its_defaults():
    at = open_page("app_pages/training.py")
    at.number_input(key="tr_steps").set_value(30).run()
    assert not at.exception
    at.switch_page("app_pages/trust.py").run()
    assert not at.exception, at.exception
    assert at.number_input(key="trust_steps").value == 32
    at.switch_page("app_pages/training.py").run()
    assert at.number_input(key="tr_steps").value == 30
