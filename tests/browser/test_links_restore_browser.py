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


def test_a_text_too_long_for_the_link_is_marked_and_the_opened_link_says_so(page, app_server):
    """A sidebar text over 2,000 characters stays out of the URL, which says it was left out; opening that URL
    shows the default text with a note saying why."""
    from tests.browser.helpers import set_sidebar_text

    open_path(page, app_server, "/heatmap")
    set_sidebar_text(page, "word " * 450)
    params = url_params(page)
    assert "text" not in params and params.get("long_text") == "1", params
    page.goto(page.url)  # the link opened anew: a new session
    wait_for_app(page)
    page.get_by_text("longer than a link can hold (2,000 characters)").first.wait_for(timeout=30_000)
    assert page.locator('[data-testid="stSidebar"] textarea').first.input_value() != "word " * 450
