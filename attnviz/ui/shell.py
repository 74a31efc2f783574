"""Guard so a page always runs inside app.py's navigation and shared sidebar."""
from __future__ import annotations

import streamlit as st


def ensure_app_shell() -> None:
    """Call first in every page.

    Streamlit keeps a legacy mode for apps with a pages/ folder: until some session has run
    app.py (whose st.navigation turns that mode off), a first visit to /<page> after a server
    start runs the page file alone, without app.py's sidebar. Turn the mode off and rerun,
    which runs app.py with the same page."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
