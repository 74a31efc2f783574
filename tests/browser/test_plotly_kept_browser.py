"""Chromium: plotly.js comes from the app's static files with a time of last change, and a page loaded again takes
it from the browser's cache (nothing transferred) and still draws its charts."""
from __future__ import annotations

import pytest

from tests.browser.helpers import look_at, open_path
from tests.conftest import VIEWPORT

pytestmark = pytest.mark.browser

# the resource timing of plotly.js in this document: where it came from and how many bytes travelled for it
PLOTLY = """() => performance.getEntriesByType('resource').filter(e => /plotly/.test(e.name))
  .map(e => ({path: new URL(e.name).pathname, transferred: e.transferSize, size: e.decodedBodySize}))"""
DRAWN = "() => !!document.querySelector('.st-key-ro_rolled .js-plotly-plot')?._fullData"


def test_a_page_loaded_again_takes_plotly_js_from_the_browsers_cache(browser, app_server):
    context = browser.new_context(viewport=VIEWPORT)  # a browser cache of its own: the first load fetches it
    try:
        page = context.new_page()
        headers = {}
        page.on("response", lambda r: headers.update(r.all_headers()) if "/app/static/plotly-" in r.url else None)
        path = "/rollout?model_choice=minilm&lens=weights&ro_layer=1"
        open_path(page, app_server, path)
        look_at(page, "ro_rolled")
        first = page.evaluate(PLOTLY)
        assert len(first) == 1 and first[0]["path"].startswith("/app/static/plotly-"), first
        assert first[0]["transferred"] > 0 and first[0]["size"] > 4_000_000, first
        assert headers.get("last-modified") == "Sat, 01 Jan 2000 00:00:00 GMT", headers
        open_path(page, app_server, path)  # a new document in the same tab
        look_at(page, "ro_rolled")
        again = page.evaluate(PLOTLY)
        assert len(again) == 1 and again[0]["path"] == first[0]["path"], again
        assert again[0]["transferred"] == 0 and again[0]["size"] == first[0]["size"], again
        assert page.evaluate(DRAWN)
    finally:
        context.close()
