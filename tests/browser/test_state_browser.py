"""Chromium: what the user chose survives the paths a browser takes: a click that opens a
head on another page keeps the text, the token pickers relabel when the text changes, and the
rollout target is picked by token."""
import re
import time

import pytest

from tests.browser.helpers import click_marker, open_path, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

MY_TEXT = "Seven swans swam slowly past the old mill."


def _set_text(page, text: str):
    box = page.get_by_label("Text", exact=True)
    box.fill(text)
    box.press("Control+Enter")
    time.sleep(0.5)
    wait_for_app(page)


def _picker_text(page, label: str) -> str:
    box = page.get_by_role("combobox", name=label, exact=True).first
    box.scroll_into_view_if_needed()
    return box.input_value()


def test_clicking_an_entropy_cell_keeps_the_users_text(page, app_server):
    open_path(page, app_server, "/entropy")
    _set_text(page, MY_TEXT)
    i = wait_plot(page, title="Mean normalised entropy")
    click_marker(page, i, 4, 2)
    page.wait_for_url(re.compile(r"/heatmap"), timeout=60_000)
    page.wait_for_selector("text=Layer 2, head 4", timeout=60_000)
    wait_for_app(page)
    assert page.get_by_label("Text", exact=True).input_value() == MY_TEXT
    assert "Seven+swans" in page.url or "Seven%20swans" in page.url


def test_the_token_picker_follows_the_text(page, app_server):
    open_path(page, app_server, "/heatmap")
    assert "1: the" in _picker_text(page, "Token")
    _set_text(page, "Dogs bark loudly.")
    assert "1: dogs" in _picker_text(page, "Token")


def test_rollout_target_is_picked_by_token(page, app_server):
    open_path(page, app_server, "/rollout")
    _set_text(page, MY_TEXT)
    box = page.get_by_role("combobox", name="Output token", exact=True).first
    box.scroll_into_view_if_needed()
    box.click()
    page.get_by_role("option", name="3: swam", exact=True).click()
    time.sleep(0.3)
    wait_for_app(page)
    page.wait_for_selector("text=Target: swam (position 3)")
    assert "ro_target=3" in page.url
