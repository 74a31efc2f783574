"""Chromium: each page visited adds one entry to the browser's history (a run that only changes the
page's settings replaces the URL), so Back returns to the previous page in one press."""
import time
from urllib.parse import urlparse

import pytest

from tests.browser.helpers import nav_to, open_path, url_params
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _path(page) -> str:
    return urlparse(page.url).path


def _type(page, label: str, value: str):
    box = page.get_by_label(label, exact=True).and_(page.locator("input"))
    box.fill(value)
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)


def test_one_history_entry_per_page_and_back_in_one_press(page, app_server):
    """In a tab of its own: the worker's tab has the earlier tests' pages in its history, and Chromium keeps at most
    50 entries, after which a new page no longer lengthens it."""
    tab = page.context.new_page()
    tab.set_default_timeout(60_000)
    try:
        _one_entry_per_page(tab, app_server)
    finally:
        tab.close()


def _one_entry_per_page(page, app_server):
    open_path(page, app_server, "/lab_temperature")
    entries = page.evaluate("history.length")
    assert entries < 50  # room for the entry this test expects
    assert url_params(page).get("temp_T") == "1.0"
    slider = page.locator('.st-key-temp_T input[type="range"]')
    slider.focus()
    slider.press("ArrowLeft")  # one notch down the temperature grid
    time.sleep(0.5)
    wait_for_app(page)
    assert float(url_params(page)["temp_T"]) < 1.0  # the new setting is in the URL...
    assert page.evaluate("history.length") == entries  # ...in place of the old one

    nav_to(page, "Complexity", "Learn")
    page.get_by_text("Attention passes FFN at").wait_for()
    wait_for_app(page)
    assert _path(page) == "/complexity"
    _type(page, "Sequence length n", "4096")
    assert url_params(page).get("cx_n") == "4096"
    _type(page, "Sequence length n", "8192")
    assert url_params(page).get("cx_n") == "8192"
    assert page.evaluate("history.length") == entries + 1  # one entry for the page visited

    page.go_back()
    page.get_by_text("Temperature and soft lookup").first.wait_for()
    wait_for_app(page)
    assert _path(page) == "/lab_temperature"
    assert not page.get_by_text("Attention passes FFN at").count()
