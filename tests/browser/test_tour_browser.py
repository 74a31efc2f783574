"""Chromium: every Learn page's guided tour outlines an element that exists for each of its steps,
Next walks through them and brings the outlined element into view, the step box stays on screen
wherever the page is scrolled, and the tour works in presentation mode."""
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

# Where the outlined element and the step box are on screen: the part of the window not covered by
# Streamlit's header above or the step box below is [top, bottom].
PLACES = """([key, page]) => {
  const rect = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
                         return {top: r.top, bottom: r.bottom, height: r.height}; };
  const header = document.querySelector('[data-testid="stHeader"]');
  const box = rect(document.querySelector('.st-key-tour_box_' + page));
  return {el: rect(document.querySelector('.st-key-' + key)), box: box, view: window.innerHeight,
          top: header ? header.getBoundingClientRect().bottom : 0,
          bottom: box && box.top > window.innerHeight / 2 ? box.top : window.innerHeight}; }"""

TO_BOTTOM = """() => { const main = document.querySelector('[data-testid="stMain"]');
  main.scrollTop = main.scrollHeight; return main.scrollTop; }"""


def _in_view(p) -> bool:
    """The element lies in the uncovered part of the window, or (taller than it) starts in its top third."""
    el, top, bottom = p["el"], p["top"], p["bottom"]
    if el["height"] <= bottom - top:
        return el["top"] >= top - 1 and el["bottom"] <= bottom + 1
    return top - 1 <= el["top"] <= top + (bottom - top) / 3


def _wait_in_view(page, key: str, name: str, timeout: float = 10.0) -> dict:
    deadline = time.time() + timeout
    while True:
        p = page.evaluate(PLACES, [key, name])
        if p["el"] and _in_view(p) or time.time() > deadline:
            return p
        time.sleep(0.2)


def _box_on_screen(p) -> bool:
    return p["box"] is not None and p["box"]["top"] >= 0 and p["box"]["bottom"] <= p["view"] and p["box"]["height"] > 0


@pytest.mark.parametrize("present", [False, True], ids=["normal", "presentation"])
def test_every_tour_step_outlines_its_element(page, app_server, present):
    pages = list(TOURS) if not present else ["lab_temperature", "lab_explanation"]
    for name in pages:
        page.goto(app_server.url + f"/{name}" + ("?present=1" if present else ""))
        wait_for_app(page)
        page.locator(f".st-key-tour_on_{name}").get_by_text("Guided tour").click()
        page.get_by_text(f"step 1 of {len(TOURS[name])}").first.wait_for(timeout=30_000)
        wait_for_app(page, settle=0.5)
        for i, (key, text) in enumerate(TOURS[name]):
            page.get_by_text(f"step {i + 1} of {len(TOURS[name])}").first.wait_for(timeout=30_000)
            assert page.evaluate(OUTLINED, key) == "solid", (name, key, page.evaluate(OUTLINED, key))
            p = _wait_in_view(page, key, name)
            assert _in_view(p), (name, key, p)  # the outlined element was brought into view
            assert _box_on_screen(p), (name, key, p)
            if i == 0:  # the box is fixed to the window: it stays on screen wherever the page is scrolled
                page.evaluate(TO_BOTTOM)
                time.sleep(0.2)
                p = page.evaluate(PLACES, [key, name])
                assert _box_on_screen(p), (name, key, "after scrolling to the bottom", p)
            if i + 1 < len(TOURS[name]):
                page.locator(f".st-key-tour_next_{name} button").click()
                page.get_by_text(f"step {i + 2} of {len(TOURS[name])}").first.wait_for(timeout=30_000)
                wait_for_app(page, settle=0.5)
        assert not exception_texts(page), name
