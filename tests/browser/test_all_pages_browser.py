"""Chromium: every page of the registry renders its title with no exception box."""
import pytest

from attnviz.ui.registry import HOME, PAGES
from tests.conftest import ARTIFACTS, wait_for_app

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("spec", PAGES, ids=lambda spec: spec.name)
def test_page_renders_in_chromium(page, app_server, spec):
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.goto(app_server.url + ("/" if spec is HOME else f"/{spec.name}"))
    wait_for_app(page, timeout=180)
    page.locator('h1, [data-testid="stException"]').first.wait_for(timeout=120_000)
    wait_for_app(page, timeout=180)
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, exceptions.first.inner_text()
    assert page.locator("h1").first.inner_text().strip()
    page.screenshot(path=str(ARTIFACTS / f"page-{spec.name}.png"))
