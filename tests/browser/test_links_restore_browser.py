"""Chromium: a link opens the complexity page on its tab and the training page on its step, and
choosing another tab or step puts it into the URL."""
import time

import pytest

from tests.browser.helpers import open_path, url_params
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _open_tab(page) -> str:
    return page.locator('[data-testid="stMain"] [role="tab"][aria-selected="true"]').first.inner_text()


def test_complexity_link_opens_its_tab(page, app_server):
    open_path(page, app_server, "/complexity?cx_tab=Curves+against+n&cx_n=4096")
    page.get_by_text("Attention passes FFN at").wait_for()
    assert _open_tab(page) == "Curves against n"
    assert page.get_by_text("Both axes are logarithmic").is_visible()  # the tab's own content shows
    assert url_params(page)["cx_tab"] == "Curves against n" and url_params(page)["cx_n"] == "4096"
    page.get_by_role("tab", name="Attention vs RNN").click()
    time.sleep(0.5)
    wait_for_app(page)
    assert url_params(page)["cx_tab"] == "Attention vs RNN"


def test_training_link_opens_its_step(page, app_server):
    open_path(page, app_server, "/training?tr_frame=10")
    slider = page.locator('.st-key-tr_frame input[type="range"]')
    slider.wait_for(state="attached")
    assert slider.get_attribute("aria-valuetext") == "step 30"  # the recorded run snapshots every 3 steps
    assert "step 30" in page.locator(".st-key-tr_heat").inner_text()  # the heatmap is that step's
    slider.focus()
    slider.press("ArrowRight")
    time.sleep(0.5)
    wait_for_app(page)
    assert url_params(page)["tr_frame"] == "11"
    assert slider.get_attribute("aria-valuetext") == "step 33"
