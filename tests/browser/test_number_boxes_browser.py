"""Chromium: a number typed outside a box's range reaches the page (the browser does not hold it back behind a
hover tooltip), a message on screen says what was used instead, and the figures are computed with it."""
import time

import pytest

from tests.browser.helpers import exception_texts, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

SPLIT = """() => { const el = [...document.querySelectorAll('.js-plotly-plot')].find(
    e => e._fullData && e._fullData[0].type === 'bar' && e._fullData[0].orientation === 'h');
    return el._fullData.map(t => t.x[0]); }"""


def test_an_out_of_range_head_count_is_said_on_screen_and_used_corrected(page, app_server):
    page.goto(app_server.url + "/lab_multihead")
    wait_for_app(page)
    page.get_by_text("3 · Concatenate the heads").first.wait_for()
    wait_for_app(page)
    assert page.evaluate(SPLIT) == [4, 4, 4, 4]  # d_model 16 / 4 heads
    box = page.get_by_label("heads h", exact=True)
    box.scroll_into_view_if_needed()
    box.fill("99")
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="“heads h” takes values from 1 to 16")
    alert.first.wait_for()
    assert alert.first.is_visible()  # on screen, without hovering anything
    assert "99 was set to 16, and the page shows results for 16" in alert.first.inner_text()
    assert box.input_value() == "16"
    wait_plot(page, title="head 16 (KV head 16)")
    assert page.evaluate(SPLIT) == [1] * 16  # 16 / 16: the figures follow the value the box shows
    page.wait_for_function("() => location.search.includes('mh_heads=16')")
    assert exception_texts(page) == []
