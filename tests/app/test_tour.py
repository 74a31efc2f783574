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


def _scroll_script(at) -> str:
    found = [h.proto for h in at.get("html") if "__attnvizTourAt" in h.proto.body]
    assert len(found) == 1 and found[0].unsafe_allow_javascript
    return found[0].body


def test_each_move_through_the_tour_scrolls_to_its_element_once():
    import re

    at = open_page("app_pages/lab_temperature.py")
    at.toggle(key="tour_on_lab_temperature").set_value(True).run()
    steps = TOURS["lab_temperature"]
    first = _scroll_script(at)
    assert f'key = "{steps[0][0]}"' in first
    token = lambda body: re.search(r"const token = (\"[^\"]+\")", body).group(1)
    at.run()  # a rerun that is not a move keeps the script as it was: the page does not jump
    assert _scroll_script(at) == first
    at.button(key="tour_next_lab_temperature").click().run()
    second = _scroll_script(at)
    assert f'key = "{steps[1][0]}"' in second and token(second) != token(first)
    at.button(key="tour_back_lab_temperature").click().run()
    back = _scroll_script(at)
    assert f'key = "{steps[0][0]}"' in back and token(back) not in (token(first), token(second))
    styles = " ".join(h.proto.body for h in at.get("html"))
    assert ".st-key-tour_box_lab_temperature { position: fixed;" in styles  # the box stays on screen
