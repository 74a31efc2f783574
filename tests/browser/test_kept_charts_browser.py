"""Chromium: a chart drawn in place that the page removed (another slide or page shown) and that comes back with the
same figure at the same width is put back as it was drawn, not drawn again; it still answers hovers and clicks. At
another width it is drawn anew, to fill its box."""
from __future__ import annotations

import re
import time

import pytest

from attnviz.bench.browser import Browser
from tests.browser.helpers import hover_label, look_at, nav_to, open_path
from tests.conftest import CONTEXT, wait_for_app

pytestmark = pytest.mark.browser

# Each chart drawn in place on the page, by its key: a mark on its element and its drawing (plotly.js makes a new
# _fullLayout on every draw), kept in the page to compare with later
MARK = """(tag) => {
  window.__kept = window.__kept || {};
  for (const gd of document.querySelectorAll('.attnviz-plotly')) {
    const key = [...gd.closest('[class*="st-key-"]').classList].find(c => c.startsWith('st-key-')).slice(7);
    gd.__mark = tag + ':' + key;
    window.__kept[key] = gd._fullLayout;
  }
}"""

# Each chart drawn in place now, by its key: the mark found on its element, whether its drawing is the one kept,
# its first trace's values, its width and its box's
NOW = """() => Object.fromEntries([...document.querySelectorAll('.attnviz-plotly')].map((gd) => {
  const key = [...gd.closest('[class*="st-key-"]').classList].find(c => c.startsWith('st-key-')).slice(7);
  const t = gd._fullData && gd._fullData[0];
  // plotly's width against its box's (the box's in whole pixels)
  return [key, {mark: gd.__mark || null, sameDrawing: !!window.__kept && window.__kept[key] === gd._fullLayout,
                values: t ? JSON.stringify(Array.from(t.z || t.y || [], (r) => (r && r.length ? Array.from(r) : r))) : null,
                width: gd._fullLayout ? gd._fullLayout.width : null, box: gd.parentElement.clientWidth}];
}))"""

SLIDE_JS = "() => { const b = document.querySelector('[data-testid=\"deck-bar\"]'); return b ? +b.dataset.slide : null; }"


def test_going_back_to_a_page_puts_its_charts_back_and_they_still_answer(page, app_server):
    open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights&layer=1&head=2")
    look_at(page, "hm_heatmap")
    page.evaluate(MARK, "first")
    before = page.evaluate(NOW)
    assert {"hm_grid", "hm_heatmap"} <= set(before)
    nav_to(page, "Entropy")
    assert "hm_heatmap" not in page.evaluate(NOW)
    nav_to(page, "Attention heatmap")
    look_at(page, "hm_heatmap")
    back = page.evaluate(NOW)
    for key in ("hm_grid", "hm_heatmap"):  # the same elements with the same drawing: not drawn again
        assert back[key]["mark"] == f"first:{key}" and back[key]["sameDrawing"], (key, back[key])
        assert back[key]["values"] == before[key]["values"] and abs(back[key]["width"] - back[key]["box"]) <= 1
    # it answers a hover with the cell's weight, as when it was drawn
    assert re.fullmatch(r"query 3: .*key 5: .*weight [0-9.e-]+", hover_label(page, "hm_heatmap", 3, 5))
    # and a click on the grid put back opens that head: the map shows layer 0, head 7 (a new figure, drawn)
    Browser.on(page, app_server.url).click_head("hm_grid", 0, 7, ".st-key-hm_heatmap")
    wait_for_app(page)
    page.get_by_role("heading", name="Layer 0, head 7").first.wait_for(timeout=30_000)
    look_at(page, "hm_heatmap")
    after = page.evaluate(NOW)["hm_heatmap"]
    assert after["values"] != before["hm_heatmap"]["values"] and not after["sameDrawing"]

    # at another window width the charts come back drawn anew, filling their boxes
    page.evaluate(MARK, "second")
    nav_to(page, "Entropy")
    page.set_viewport_size({"width": 1100, "height": 800})
    nav_to(page, "Attention heatmap")
    look_at(page, "hm_heatmap")
    wider = page.evaluate(NOW)
    for key in ("hm_grid", "hm_heatmap"):
        assert wider[key]["mark"] is None and not wider[key]["sameDrawing"], (key, wider[key])
        assert abs(wider[key]["width"] - wider[key]["box"]) <= 1 and wider[key]["box"] < back[key]["box"] - 100, (
            key, wider[key], back[key])
    assert wider["hm_heatmap"]["values"] == after["values"]  # still layer 0, head 7


def test_the_page_keeps_only_the_latest_charts_within_its_budget(browser, app_server):
    """With the budget of kept figures at one byte, the page keeps only the chart it drew last: going back, that one
    chart is put back and every other is drawn anew."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, **CONTEXT)  # its own tab: the budget
    page = context.new_page()                                                         # stays in it
    page.set_default_timeout(60_000)
    page.add_init_script("window.__attnvizDrawnBytes = 1")
    try:
        open_path(page, app_server, "/heatmap?model_choice=minilm&lens=weights&layer=1&head=2")
        look_at(page, "hm_heatmap")
        page.evaluate(MARK, "first")
        nav_to(page, "Entropy")
        nav_to(page, "Attention heatmap")
        look_at(page, "hm_heatmap")
        back = page.evaluate(NOW)
        assert len(back) >= 4 and back["hm_heatmap"]["mark"] is None, back
        assert sum(now["mark"] is not None for now in back.values()) <= 1, back
        assert all(abs(now["width"] - now["box"]) <= 1 for now in back.values()), back
    finally:
        context.close()


def test_a_slide_shown_again_has_its_charts_put_back(browser, app_server):
    context = browser.new_context(viewport={"width": 1280, "height": 720}, **CONTEXT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    bench = Browser.on(page, app_server.url)  # its watch of the page's inputs, from the first page load on
    try:
        page.goto(app_server.url + "/deck")
        wait_for_app(page)
        page.get_by_role("button", name="Open this deck").click()
        wait_for_app(page)
        page.get_by_role("button", name="Start presenting").click()
        wait_for_app(page)
        page.get_by_role("link", name=re.compile("Go to slide 1")).click()
        bar = '[data-testid="deck-bar"]'
        bench.settle(bar, None, time.perf_counter(), 300)
        bench.key("ArrowRight", bar)
        bench.key("ArrowRight", bar)
        assert page.evaluate(SLIDE_JS) == 2
        page.evaluate(MARK, "slide 3")
        before = page.evaluate(NOW)
        assert len(before) >= 4  # the Query·Key slide's charts
        bench.key("ArrowRight", bar)
        assert page.evaluate(SLIDE_JS) == 3 and not set(page.evaluate(NOW)) & set(before)
        bench.key("ArrowLeft", bar)
        assert page.evaluate(SLIDE_JS) == 2
        back = page.evaluate(NOW)
        assert set(back) == set(before)
        for key, now in back.items():
            assert now["mark"] == f"slide 3:{key}" and now["sameDrawing"], (key, now)
            assert now["values"] == before[key]["values"] and abs(now["width"] - now["box"]) <= 1, (key, now)
    finally:
        context.close()
