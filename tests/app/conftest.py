"""AppTest set-up shared by the app tests."""
import pytest


@pytest.fixture(autouse=True)
def _navigation_mode(monkeypatch):
    """Run AppTest as a served app runs after its first page view: in st.navigation mode.

    AppTest rebuilds Streamlit's PagesManager before every run, which switches the legacy
    pages/ mode back on each time; attnviz.ui.shell.ensure_app_shell() would then rerun every
    run and swallow button clicks. A real server leaves that mode once app.py has run."""
    from streamlit.runtime import pages_manager
    from streamlit.testing.v1 import app_test

    class NavigationPagesManager(pages_manager.PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pages_manager.PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test, "PagesManager", NavigationPagesManager)
