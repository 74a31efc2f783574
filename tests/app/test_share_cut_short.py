"""A link or slide built after a run that did not reach its end (cut short by a rerun, or stopped) still carries
the page's own settings, taken from the same page's last whole run."""
from streamlit.testing.v1 import AppTest


def _script():
    import streamlit as st

    from attnviz.ui import share

    share.start_run(st.session_state["t_page"])
    st.button("Add", key="t_add", on_click=lambda: st.session_state.__setitem__("t_link", share.view_link()))
    if st.session_state.get("t_cut"):
        st.stop()  # the run ends before the page binds its keys, as one cut short in the sidebar does
    if st.session_state.get("t_bind", True):
        share.bind({"hm_focus": int})
    share.run_completed()


def _app(page: str = "heatmap") -> AppTest:
    at = AppTest.from_function(_script, default_timeout=30)
    at.session_state["t_page"] = page
    at.session_state["hm_focus"] = 4
    at.session_state["layer"] = 2
    at.run()
    assert not at.exception, at.exception
    return at


def _add(at: AppTest) -> str:
    at.button(key="t_add").click().run()
    assert not at.exception, at.exception
    return at.session_state["t_link"]


def test_a_slide_added_after_a_cut_short_run_keeps_the_page_settings():
    at = _app()
    assert _add(at) == "/heatmap?layer=2&hm_focus=4"  # a whole run: its own keys
    at.session_state["t_cut"] = True
    at.run()
    at.session_state["hm_focus"] = 6
    assert _add(at) == "/heatmap?layer=2&hm_focus=6"  # the last whole run's keys, at their values now


def test_another_page_cut_short_does_not_take_the_last_page_settings():
    at = _app()
    at.session_state["t_page"] = "entropy"
    at.session_state["t_cut"] = True
    at.run()
    assert _add(at) == "/entropy?layer=2"


def test_a_whole_run_that_binds_a_key_no_more_leaves_it_out():
    at = _app()
    at.session_state["t_bind"] = False
    at.run()
    assert _add(at) == "/heatmap?layer=2"
