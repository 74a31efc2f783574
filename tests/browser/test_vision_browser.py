"""Chromium: train the vision transformer on the Training page, open it on the Vision page, open a head from the
grid of overlays and click a patch to look from it."""
import pytest

from tests.browser.helpers import click_marker, nav_to, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

TITLE = "(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullLayout.title.text"
SOURCE = "(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].source"


def test_train_then_open_a_head_and_click_a_patch(page, app_server):
    page.goto(app_server.url + "/training")
    wait_for_app(page)
    group = page.locator('[data-testid="stButtonGroup"]').filter(has=page.locator('[aria-label="What to watch"]'))
    group.get_by_role("radio", name="Images (ViT)").click()
    wait_for_app(page)
    steps = page.get_by_label("Steps", exact=True)
    steps.fill("40")
    steps.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="▶ Train the vision transformer").click()
    page.get_by_text("Training:").first.wait_for(timeout=60_000)  # the live progress bar
    wait_plot(page, title="mean of heads · step 40", timeout=300)
    wait_for_app(page)
    page.get_by_role("button", name="Use this step on the other pages").click()
    wait_for_app(page)

    nav_to(page, "Vision", section="Inspect")
    grid = wait_plot(page, title="Every head")
    assert page.evaluate(SOURCE, grid).startswith("data:image/png;base64,")  # a picture, not numbers
    assert page.get_by_text("the step chosen on the Training page").count() >= 1
    # open layer 0, head 2: its thumbnail's centre in the grid (96-pixel thumbnails, 6-pixel gaps)
    click_marker(page, grid, 6 + 2 * 102 + 48, 6 + 48)
    head = wait_plot(page, title="Layer 0, head 2: where [CLS] looks")
    # click patch (row 1, column 2) of the 240-pixel overlay (16 patches of 60 pixels)
    click_marker(page, head, 2.5 * 60, 1.5 * 60)
    wait_plot(page, title="Layer 0, head 2: where r1c2 looks")
    assert page.get_by_role("button", name="Look from [CLS] again").count() == 1
