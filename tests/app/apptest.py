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


def run_until(at: AppTest, key: str, timeout: float = 240) -> None:
    """Rerun `at` until session key `key` is set (a background job's result collected), then once more to draw it;
    asserts every run is free of exceptions."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        at.run()
        assert not at.exception, at.exception
        if key in at.session_state:
            at.run()
            return
        time.sleep(0.3)
    raise AssertionError(f"{key} was not set after {timeout:.0f} s")


def share_links(at) -> str:
    """The links in the sidebar's 'Link to this view' box (ui.copy_link), space-separated."""
    import html
    import re

    from attnviz.ui.copy_link import BOX

    return " ".join(html.unescape(m) for e in at.get("html")
                    for m in re.findall(f'<div class="{BOX}"><code>(.*?)</code>', e.proto.body))
