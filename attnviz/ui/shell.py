"""Guard so a page always runs inside app.py's navigation and shared sidebar."""
from __future__ import annotations

import threading
from contextlib import contextmanager

import streamlit as st

# Streamlit runs each session's script in a thread of its own; app.py marks its run here.
_RUN = threading.local()


@contextmanager
def app_shell():
    """app.py wraps nav.run() in this: pages running inside it have the sidebar and navigation."""
    _RUN.inside = True
    try:
        yield
    finally:
        _RUN.inside = False


def ensure_app_shell() -> None:
    """Call first in every page.

    Streamlit keeps a legacy mode for apps with a pages/ folder: until some session has run
    app.py (whose st.navigation turns that mode off), a visit to /<page> runs the page file
    alone, without app.py's sidebar; several first visitors at once can all land there. Such a
    run is detected (it is not inside app_shell()), the mode is turned off and the run restarts,
    now through app.py with the same page."""
    if getattr(_RUN, "inside", False):
        return
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    st.rerun()
