"""AppTest: the guided tour of a Learn page steps forward and back, one element at a time."""
from attnviz.ui.tour import TOURS
from tests.app.apptest import open_page


def _step_text(at):
    return next((m.value for m in at.markdown if m.value.startswith("**Tour · step")), None)


def test_tour_steps_forward_and_back():
    at = open_page("app_pages/lab_temperature.py")
    assert _step_text(at) is None  # off by default
    at.toggle(key="tour_on_lab_temperature").set_value(True).run()
    steps = TOURS["lab_temperature"]
    assert _step_text(at).startswith(f"**Tour · step 1 of {len(steps)}**") and steps[0][1] in _step_text(at)
    assert at.button(key="tour_back_lab_temperature").disabled
    styles = " ".join(h.proto.body for h in at.get("html"))
    assert f".st-key-{steps[0][0]} " in styles  # the first step's element is outlined
    for i in range(1, len(steps)):
        at.button(key="tour_next_lab_temperature").click().run()
        assert _step_text(at).startswith(f"**Tour · step {i + 1} of")
    assert at.button(key="tour_next_lab_temperature").disabled
    styles = " ".join(h.proto.body for h in at.get("html"))
    assert f".st-key-{steps[-1][0]} " in styles and f".st-key-{steps[0][0]} " not in styles
    at.button(key="tour_back_lab_temperature").click().run()
    assert _step_text(at).startswith(f"**Tour · step {len(steps) - 1} of")


def test_every_learn_page_has_a_tour():
    from attnviz.ui.registry import PAGES

    assert {p.name for p in PAGES if p.section == "Learn"} == set(TOURS)
