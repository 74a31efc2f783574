"""Chromium: every page in the navigation renders its title with no exception box."""
import pytest

from tests.app.test_all_pages import _pages
from tests.conftest import ARTIFACTS, wait_for_app

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("page_file", _pages())
def test_page_renders_in_chromium(page, app_server, page_file):
    stem = page_file.split("/")[-1][:-3]
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.goto(app_server.url + ("/" if stem == "home" else f"/{stem}"))
    wait_for_app(page, timeout=180)
    page.locator("h1").first.wait_for(timeout=120_000)
    wait_for_app(page, timeout=180)
    assert page.locator('[data-testid="stException"]').count() == 0, page.locator('[data-testid="stException"]').first.inner_text()
    page.screenshot(path=str(ARTIFACTS / f"page-{stem}.png"))
