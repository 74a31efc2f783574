"""Chromium: every Learn page's guided tour outlines an element that exists for each of its steps,
Next walks through them, and the tour works in presentation mode."""
import time

import pytest

from attnviz.ui.tour import TOURS
from tests.browser.helpers import exception_texts
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

OUTLINED = """(key) => { const el = document.querySelector('.st-key-' + key);
  if (!el) return 'missing'; const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return 'hidden';
  return getComputedStyle(el).outlineStyle; }"""


@pytest.mark.parametrize("present", [False, True], ids=["normal", "presentation"])
def test_every_tour_step_outlines_its_element(page, app_server, present):
    pages = list(TOURS) if not present else ["lab_temperature", "lab_explanation"]
    for name in pages:
        page.goto(app_server.url + f"/{name}" + ("?present=1" if present else ""))
        wait_for_app(page)
        page.locator(f".st-key-tour_on_{name}").get_by_text("Guided tour").click()
        time.sleep(0.4)
        wait_for_app(page)
        for i, (key, text) in enumerate(TOURS[name]):
            page.get_by_text(f"step {i + 1} of {len(TOURS[name])}").first.wait_for(timeout=30_000)
            assert page.evaluate(OUTLINED, key) == "solid", (name, key, page.evaluate(OUTLINED, key))
            if i + 1 < len(TOURS[name]):
                page.locator(f".st-key-tour_next_{name} button").click()
                time.sleep(0.4)
                wait_for_app(page)
        assert not exception_texts(page), name
