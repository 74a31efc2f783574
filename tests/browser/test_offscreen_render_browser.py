"""Chromium: the charts drawn in place and the shaded texts are laid out and painted only near the window
(content-visibility: auto). A part of the page far from the window is skipped until the reader scrolls to it; then
it is drawn, with its data, at the height it keeps, so nothing around it moves. A chart far from the window when a
run sends it a new figure draws it only when it comes within half a window height of the window, or when the page
is printed."""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attnviz.bench.browser import Browser
from tests.browser.helpers import open_path
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

KEYS = ("hm_grid", "hm_heatmap", "hm_focus_out", "hm_text_row", "hm_lines")

# Every skip or render the browser decides from now on, by the element's key (the event fires on the element whose
# content-visibility is auto, each time it starts or stops being skipped).
LISTEN = """() => {
  window.__skipped = {};
  document.addEventListener('contentvisibilityautostatechange', (e) => {
    const box = e.target.closest('[class*="st-key-"]');
    const key = box && [...box.classList].find(c => c.startsWith('st-key-'));
    if (key) window.__skipped[key.slice(7)] = e.skipped;
  }, true);
}"""

# The element of `key` the app renders near the window only: its computed content-visibility, its box, whether its
# contents are rendered (not skipped) and whether the point at its centre hits one of them (the browser hit-tests
# only what it has laid out)
BOX = """(key) => {
  const el = document.querySelector(`.st-key-${key} .attnviz-plotly, .st-key-${key} .attnviz-html`);
  const r = el.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + Math.min(r.height / 2, 40));
  const first = el.firstElementChild;
  return {visibility: getComputedStyle(el).contentVisibility, height: r.height, top: r.top,
          rendered: !!first && first.checkVisibility({contentVisibilityAuto: true}),
          hit: hit !== el && el.contains(hit), data: el._fullData ? el._fullData.length : null};
}"""

# each token's hover text in the shaded text of `key`
TITLES = "(key) => [...document.querySelectorAll(`.st-key-${key} .attnviz-html [title]`)].map(e => e.title)"


def _scroll_to(page, key: str, expect: dict[str, bool] | None = None) -> dict:
    """Scroll the box of `key` to the middle of the window and wait (at most 15 s) until the browser has rendered it
    and, with `expect` ({key: skipped}), decided those too; returns every decision since LISTEN."""
    page.evaluate("(k) => document.querySelector('.st-key-' + k).scrollIntoView({block: 'center'})", key)
    try:
        page.wait_for_function(f"([key, want]) => ({BOX})(key).rendered && Object.entries(want).every("
                               "([k, v]) => (window.__skipped || {})[k] === v)", arg=[key, expect or {}],
                               timeout=15_000)
    except PlaywrightTimeout:
        pass  # the assertions below say what the browser decided instead
    return page.evaluate("() => window.__skipped || {}")


def test_a_chart_far_from_the_window_is_skipped_until_scrolled_to_and_then_drawn(page, app_server):
    open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights")
    for key in KEYS:
        assert page.evaluate(BOX, key)["visibility"] == "auto", key
    page.evaluate(LISTEN)
    heights = {key: page.evaluate(BOX, key)["height"] for key in ("hm_grid", "hm_lines")}
    skipped = _scroll_to(page, "hm_lines", {"hm_lines": False, "hm_grid": True})
    # the lines view came into view and is rendered; the grid, two screens above, is now skipped
    assert skipped.get("hm_lines") is False and skipped.get("hm_grid") is True, skipped
    lines = page.evaluate(BOX, "hm_lines")
    assert lines["rendered"] and lines["hit"] and lines["data"] and 0 < lines["top"] < page.viewport_size["height"]
    skipped = _scroll_to(page, "hm_grid", {"hm_grid": False, "hm_lines": True})
    assert skipped.get("hm_grid") is False and skipped.get("hm_lines") is True, skipped
    grid = page.evaluate(BOX, "hm_grid")
    assert grid["rendered"] and grid["hit"] and grid["data"]
    # a chart keeps its own height while skipped: the page does not move under the reader
    assert {key: page.evaluate(BOX, key)["height"] for key in ("hm_grid", "hm_lines")} == heights


def test_a_shaded_text_set_while_far_from_the_window_shows_the_new_weights_when_scrolled_to(page, app_server):
    # a low window: Chromium renders what lies within about one and a half window heights of it
    page.set_viewport_size({"width": 1400, "height": 600})
    open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights&layer=0&head=0")
    _scroll_to(page, "hm_text_row")
    before = page.evaluate(TITLES, "hm_text_row")
    assert page.evaluate(BOX, "hm_text_row")["rendered"] and len(before) >= 10
    page.evaluate(LISTEN)
    assert _scroll_to(page, "hm_grid", {"hm_text_row": True}).get("hm_text_row") is True
    # head 3 from its thumbnail (the bench's click, which waits until the heatmap shows it): the part reruns
    # while the texts are skipped, far below the window
    Browser.on(page, app_server.url).click_head("hm_grid", 0, 3, ".st-key-hm_heatmap")
    wait_for_app(page)
    _scroll_to(page, "hm_text_row")
    after = page.evaluate(BOX, "hm_text_row")
    assert after["rendered"] and after["visibility"] == "auto" and after["height"] > 0
    titles = page.evaluate(TITLES, "hm_text_row")
    # the same tokens, each with head 3's weight now ("token (i): weight w")
    assert [t.rsplit(" ", 1)[0] for t in titles] == [t.rsplit(" ", 1)[0] for t in before]
    assert titles != before


# the lines view's chart: whether a figure waits on it, and its traces as drawn (plotly.js's data)
LINES = """() => {
  const el = document.querySelector('.st-key-hm_lines .attnviz-plotly');
  return {waiting: el.dataset.deferred === '1', drawing: el.dataset.drawing === '1',
          drawn: JSON.stringify(el.data.map(t => [t.x, t.y, t.line, t.opacity, t.text, t.hovertext]))};
}"""


def _lines_skipped(page) -> bool:
    try:
        page.wait_for_function(f"() => !({BOX})('hm_lines').rendered", timeout=15_000)
    except PlaywrightTimeout:
        pass
    return not page.evaluate(BOX, "hm_lines")["rendered"]


def test_a_chart_far_from_the_window_is_drawn_again_only_when_it_comes_near_or_the_page_is_printed(page, app_server):
    grid = Browser.on(page, app_server.url)
    open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights&layer=0&head=0")
    first = page.evaluate(LINES)
    assert not first["waiting"] and first["drawn"]
    # the grid near the top of the window: the lines view, below the token focus, is two windows away
    page.evaluate("() => document.querySelector('.st-key-hm_grid').scrollIntoView({block: 'start'})")
    assert _lines_skipped(page)
    grid.click_head("hm_grid", 0, 3, ".st-key-hm_heatmap")
    wait_for_app(page)
    # head 3's lines wait on the chart, which still holds head 0's (the reader cannot see it)
    waiting = page.evaluate(LINES)
    assert waiting["waiting"] and not waiting["drawing"] and waiting["drawn"] == first["drawn"]
    # scrolled until its top is a quarter of a window below the window: it is drawn before the reader sees it
    top = page.evaluate("""() => {
        const main = document.querySelector('[data-testid="stMain"]');
        const el = document.querySelector('.st-key-hm_lines .attnviz-plotly');
        main.scrollBy(0, el.getBoundingClientRect().top - 1.25 * window.innerHeight);
        return el.getBoundingClientRect().top / window.innerHeight; }""")
    assert 1.2 < top < 1.3, top
    page.wait_for_function(f"() => !({LINES})().waiting && !({LINES})().drawing", timeout=15_000)
    head3 = page.evaluate(LINES)["drawn"]
    assert head3 != first["drawn"]
    assert page.evaluate(BOX, "hm_lines")["top"] > page.viewport_size["height"]  # still below the window
    # what a page opened on head 3 draws
    page.reload()
    wait_for_app(page)
    _scroll_to(page, "hm_lines")
    assert page.evaluate(LINES)["drawn"] == head3

    # printing draws every waiting chart (the printed page shows them all)
    page.evaluate("() => document.querySelector('.st-key-hm_grid').scrollIntoView({block: 'start'})")
    assert _lines_skipped(page)
    grid.click_head("hm_grid", 0, 7, ".st-key-hm_heatmap")
    wait_for_app(page)
    assert page.evaluate(LINES)["waiting"]
    page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
    page.wait_for_function(f"() => !({LINES})().waiting && !({LINES})().drawing", timeout=15_000)
    head7 = page.evaluate(LINES)["drawn"]
    assert head7 not in (head3, first["drawn"])
    assert not page.evaluate(BOX, "hm_lines")["rendered"]  # drawn while still far from the window
