"""Opening a page in Streamlit's AppTest the way a visitor does: app.py first, then the page."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import APP


def open_page(page: str, query: dict | None = None, timeout: float = 180, **state) -> AppTest:
    """AppTest of app.py switched to `page` ("app_pages/x.py"), with session state and URL query
    values set before the first run; asserts the page ran without an exception."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    if query:
        at.query_params.update(query)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at
