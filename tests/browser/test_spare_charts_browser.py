"""Chromium: while a deck's slide is shown, the browser draws the next slide's charts out of sight (ui.plotly_bytes
spareCharts, from the charts that slide drew on this server: ui.decks.keep_slide_charts), and the next slide puts
them back instead of drawing them. A browser that has not seen those charts' widths at this window size draws
nothing ahead, and the slide draws them as before."""
import re

import pytest

from tests.browser.helpers import exception_texts
from tests.browser.test_deck_browser import PROJECTOR, _keys, _on_slide, _open_shipped
from tests.conftest import CONTEXT, wait_for_app

pytestmark = pytest.mark.browser

# slide 2 of the shipped deck (Queries, keys and values: lab_steps) draws these charts in place
SLIDE_2 = ["steps_fig_scores", "steps_fig_scaled", "steps_fig_weights", "steps_fig_output"]
SPARE_DONE = "() => !document.documentElement.dataset.spareDrawing"
# the charts drawn out of sight: their element's key (from the message), digest, whether drawn, and where they lie
SPARES = """() => [...document.querySelectorAll('body > .attnviz-spare > .attnviz-plotly')].map(gd => ({
  digest: gd.dataset.digest, drawn: !!gd._fullLayout, width: gd._fullLayout && gd._fullLayout.width,
  left: gd.getBoundingClientRect().left, hidden: getComputedStyle(gd.parentElement).visibility === 'hidden'}))"""
# every chart in the page's main area: its element's key, digest, whether it is one of those marked, its width and
# its box's (a column's may be a fraction of a pixel)
IN_PAGE = """() => [...document.querySelectorAll('[data-testid="stMain"] .attnviz-plotly')].map(gd => ({
  key: [...gd.closest('[class*="st-key-"]').classList].find(c => c.startsWith('st-key-')).slice(7),
  digest: gd.dataset.digest, marked: gd.__testSpare === true, width: gd._fullLayout && gd._fullLayout.width,
  box: gd.parentElement.getBoundingClientRect().width}))"""
# count plotly.js's drawings of charts in the main area from now on
COUNT_DRAWS = """() => { window.__testDraws = 0; const react = window.Plotly.react;
  window.Plotly.react = function (gd, ...rest) {
    if (gd.closest && gd.closest('[data-testid="stMain"]')) window.__testDraws += 1;
    return react.call(this, gd, ...rest); }; }"""


def _present_from_slide_1(page, app_server) -> None:
    _open_shipped(page, app_server)
    page.get_by_role("button", name="Start presenting").click()
    wait_for_app(page)
    page.get_by_role("link", name=re.compile("Go to slide 1")).click()
    _on_slide(page, 0)


def _rehearse(context, app_server):
    """Slides 1 and 2 presented in a new tab of `context`; the tab, on slide 2."""
    page = context.new_page()
    page.set_default_timeout(120_000)
    _present_from_slide_1(page, app_server)
    _keys(page, "ArrowRight")
    _on_slide(page, 1)
    return page


def test_the_next_slides_charts_are_drawn_out_of_sight_and_put_back(browser, app_server):
    context = browser.new_context(viewport=PROJECTOR, **CONTEXT)
    try:
        rehearsal = _rehearse(context, app_server)
        drawn_there = {c["key"]: c for c in rehearsal.evaluate(IN_PAGE)}
        assert sorted(drawn_there) == sorted(SLIDE_2)
        rehearsal.close()

        page = context.new_page()  # the lecture: the same browser, a new tab
        page.set_default_timeout(120_000)
        _present_from_slide_1(page, app_server)
        page.wait_for_function(SPARE_DONE, timeout=60_000)
        spares = page.evaluate(SPARES)
        # slide 2's four charts, drawn out of sight at the widths they had in the rehearsal
        assert sorted(s["digest"] for s in spares) == sorted(c["digest"] for c in drawn_there.values()), spares
        assert all(s["drawn"] and s["hidden"] and s["left"] < -10_000 for s in spares), spares
        assert sorted(s["width"] for s in spares) == sorted(c["width"] for c in drawn_there.values())
        page.evaluate("() => document.querySelectorAll('body > .attnviz-spare > .attnviz-plotly')"
                      ".forEach(gd => { gd.__testSpare = true; })")
        page.evaluate(COUNT_DRAWS)

        _keys(page, "ArrowRight")
        _on_slide(page, 1)
        shown = page.evaluate(IN_PAGE)
        assert sorted(c["key"] for c in shown) == sorted(SLIDE_2)
        # the very charts drawn ahead, put back in their places without plotly.js drawing any of them again
        assert all(c["marked"] and c["width"] == c["box"] for c in shown), shown
        assert {c["key"]: c["digest"] for c in shown} == {k: c["digest"] for k, c in drawn_there.items()}
        assert page.evaluate("() => window.__testDraws") == 0
        page.wait_for_function(SPARE_DONE, timeout=60_000)
        # now slide 3's (the rehearsal never showed it): nothing out of sight, and none of slide 2's left there
        assert page.evaluate(SPARES) == []
        assert not exception_texts(page)
    finally:
        context.close()


def test_a_browser_that_has_not_seen_the_widths_draws_nothing_ahead(browser, app_server):
    """The server holds slide 2's charts (another browser presented it), but this browser has never drawn them at
    this window size: nothing is drawn out of sight, and slide 2 draws its charts when shown."""
    rehearsal = browser.new_context(viewport=PROJECTOR, **CONTEXT)
    try:
        _rehearse(rehearsal, app_server)
    finally:
        rehearsal.close()
    context = browser.new_context(viewport=PROJECTOR, **CONTEXT)
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        _present_from_slide_1(page, app_server)
        assert page.locator(".st-key-deck_next_charts").count() == 1  # the server sent slide 2's charts
        page.wait_for_function(SPARE_DONE, timeout=60_000)
        assert page.evaluate(SPARES) == []
        page.evaluate(COUNT_DRAWS)
        _keys(page, "ArrowRight")
        _on_slide(page, 1)
        shown = page.evaluate(IN_PAGE)
        assert sorted(c["key"] for c in shown) == sorted(SLIDE_2)
        assert not any(c["marked"] for c in shown) and all(c["width"] == c["box"] for c in shown), shown
        assert page.evaluate("() => window.__testDraws") >= len(SLIDE_2)
        assert not exception_texts(page)
    finally:
        context.close()


@pytest.mark.parametrize("damaged", ["{not json", '[["steps_fig_scores|1280|21px", -5], "junk", [7, 3]]'])
def test_a_damaged_store_of_widths_is_started_again(browser, app_server, damaged):
    """Widths stored by another version of the page, or damaged, are not read (no chart is drawn ahead at a width
    of -5 px); the slide's charts keep theirs, and the store is written again as (text, positive width) pairs."""
    context = browser.new_context(viewport=PROJECTOR, **CONTEXT)
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(app_server.url + "/")
        wait_for_app(page)
        page.evaluate("(v) => localStorage.setItem('attnviz-widths', v)", damaged)
        _present_from_slide_1(page, app_server)
        page.wait_for_function("() => (localStorage.getItem('attnviz-widths') || '').startsWith('[[\"')",
                               timeout=30_000)
        stored = page.evaluate("() => JSON.parse(localStorage.getItem('attnviz-widths'))")
        assert stored and all(isinstance(k, str) and w > 0 for k, w in stored), stored
        assert any(k.startswith("var_fig_dot|1280|") for k, _ in stored), stored
        assert not any(w < 0 for _, w in stored)
        assert not exception_texts(page)
    finally:
        context.close()
