"""A link keeps the open tab of the complexity page and the training step scrubbed to."""
from tests.app.apptest import open_page, share_links as _link


def test_complexity_link_opens_its_tab():
    at = open_page("app_pages/complexity.py", query={"cx_tab": "Attention vs RNN", "cx_n": "4096"})
    assert at.session_state["cx_tab"] == "Attention vs RNN"
    assert at.text_input(key="cx_n").value == "4096"
    assert "cx_tab=Attention+vs+RNN" in _link(at) and "cx_n=4096" in _link(at)


def test_complexity_tab_choice_goes_into_the_link():
    at = open_page("app_pages/complexity.py")
    assert "cx_tab=Costs+at+n" in _link(at)  # the first tab when the link names none
    at.session_state["cx_tab"] = "Curves against n"
    at.run()
    assert not at.exception and "cx_tab=Curves+against+n" in _link(at)


def test_complexity_link_with_an_unknown_tab_opens_the_first():
    at = open_page("app_pages/complexity.py", query={"cx_tab": "Nonsense"})
    assert at.session_state["cx_tab"] == "Costs at n" and "cx_tab=Costs+at+n" in _link(at)


def test_training_link_opens_its_step():
    at = open_page("app_pages/training.py", query={"tr_frame": "7"})
    slider = at.select_slider(key="tr_frame")
    assert slider.value == 7
    assert "tr_frame=7" in _link(at)
    slider.set_value(12).run()
    assert not at.exception and "tr_frame=12" in _link(at)


def test_training_link_past_the_last_step_opens_the_last():
    at = open_page("app_pages/training.py", query={"tr_frame": "100000"})
    slider = at.select_slider(key="tr_frame")
    assert slider.value == len(slider.options) - 1 and f"tr_frame={slider.value}" in _link(at)
