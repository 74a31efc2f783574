"""Chromium walks the whole app as a visitor would: every page through the top navigation, every
radio, select box, toggle, checkbox, segmented control, tab, multiselect and button, away and back,
with a text of its own in the sidebar. Any exception box, page error, crash in the console, request
off this machine, server traceback, or lost sidebar text / model is a failure; all of them are
collected and listed at the end (and in test-artifacts/walk-report-*.json).

Every page is also opened by a full page load of its link (title drawn, sidebar text and model back from
the URL), and its screenshot kept in test-artifacts. `make test` runs the reduced walk in three parts that
test workers share; `make walk` (ATTNVIZ_WALK=full) the full one."""
from __future__ import annotations

import time

import pytest

from tests.browser.walker import Walker, app_pages, mode_from_env
from tests.conftest import ARTIFACTS, CONTEXT

pytestmark = pytest.mark.browser

# Not the default text: a page that falls back to the default has lost it.
WALK_TEXT = "Walking every page, the lecturer kept this sentence in the sidebar."


SHARDS = 3  # the pages are walked in three parts (every third page), so that test workers share the walk


def shard_titles(shard: int) -> list[str]:
    return [t for _, _, t in app_pages()][shard::SHARDS]


def test_the_shards_cover_every_page_once():
    titles = [t for shard in range(SHARDS) for t in shard_titles(shard)]
    assert sorted(titles) == sorted(t for _, _, t in app_pages()) and len(titles) > SHARDS


@pytest.mark.parametrize("shard", range(SHARDS))
def test_walk_every_page(browser, app_server, shard):
    mode = mode_from_env()
    titles = shard_titles(shard)
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, **CONTEXT)
    page = context.new_page()
    page.set_default_timeout(30_000)
    # the worker's server: the walker reads its log from where it stands now, so only the walk's tracebacks count
    walker = Walker(page, app_server.url, mode, server_log=ARTIFACTS / f"streamlit-{app_server.port}.log",
                    screenshots=ARTIFACTS)
    t0 = time.time()
    try:
        walker.run(WALK_TEXT, titles)
    finally:
        seconds = time.time() - t0
        data = walker.report(ARTIFACTS / f"walk-report-{mode.name}-{shard + 1}-of-{SHARDS}.json", seconds)
        try:
            page.screenshot(path=str(ARTIFACTS / f"walk-{mode.name}-{shard + 1}-last.png"), full_page=True)
        finally:
            context.close()
    visited = {p["page"] for p in data["pages"]}
    missing = [t for t in titles if t not in visited]
    print(f"\n{mode.name} walk, part {shard + 1} of {SHARDS}: {len(visited)} pages, "
          f"{sum(p['interactions'] for p in data['pages'])} interactions in {seconds:.0f} s")
    assert not missing, f"pages never visited: {missing}"
    assert not walker.failures, walker.summary()
