"""Chromium: the shipped deck opens, presents in presentation mode, steps with the arrow keys, and the
presenter view in a second tab follows; adding a view from the sidebar lands in the deck."""
import re
import time

import pytest

from tests.browser.helpers import exception_texts
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _counter(page) -> str:
    bar = page.locator('[data-testid="deck-bar"]').first
    bar.wait_for(timeout=60_000)
    return re.search(r"\d+ / \d+", bar.inner_text()).group(0)


def test_present_the_shipped_deck_with_the_keyboard(page, app_server):
    page.goto(app_server.url + "/deck")
    wait_for_app(page)
    page.get_by_role("button", name="Open this deck").click()
    wait_for_app(page)
    page.locator("h3", has_text="17 slides").first.wait_for(timeout=30_000)
    page.get_by_role("button", name="Start presenting").click()
    wait_for_app(page)
    presenter_href = page.get_by_role("link", name=re.compile("Presenter view")).first.get_attribute("href")
    page.get_by_role("link", name=re.compile("Go to slide 1")).click()
    assert _counter(page) == "1 / 17"
    wait_for_app(page)
    assert "present=1" in page.url and "/lab_variants" in page.url

    notes = page.context.new_page()
    notes.goto(app_server.url + presenter_href)
    notes.get_by_text("1 / 17 · The bottleneck").first.wait_for(timeout=30_000)

    for expected, path in (("2 / 17", "/lab_variants"), ("3 / 17", "/lab_steps")):
        page.mouse.click(1270, 790)  # focus the page (a corner with no widget), not a box
        page.keyboard.press("ArrowRight")
        page.wait_for_url(re.compile(f"slide={int(expected[0]) - 1}"), timeout=30_000, wait_until="commit")
        assert _counter(page) == expected and path in page.url
        wait_for_app(page)
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(re.compile("slide=1"), timeout=30_000, wait_until="commit")
    assert _counter(page) == "2 / 17"
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile("slide=2"), timeout=30_000, wait_until="commit")
    wait_for_app(page)
    notes.get_by_text("3 / 17 · Queries, keys and values").first.wait_for(timeout=15_000)
    assert notes.get_by_text("A query asks").count() >= 1
    assert not exception_texts(page) and not exception_texts(notes)
    notes.close()


def test_add_this_view_from_the_sidebar(page, app_server):
    page.goto(app_server.url + "/entropy")
    wait_for_app(page)
    box = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]', has_text="Add this view to the deck")
    box.first.click()
    box.first.get_by_label("Slide title").fill("Focused heads")
    box.first.get_by_role("button", name="Add this view").click()
    time.sleep(0.5)
    wait_for_app(page)
    page.get_by_text("Added slide 1: Focused heads").first.wait_for(timeout=15_000)


def test_the_shipped_deck_prepares_and_presents_end_to_end_at_1280x720(browser, app_server):
    """At a projector's 1280 x 720, "Prepare deck" readies every slide, then every slide is
    presented in turn with the arrow key: counter right, no exception, the slide bar and a heading on screen."""
    from tests.conftest import ARTIFACTS

    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(120_000)
    out = ARTIFACTS / "deck-1280x720"
    out.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(app_server.url + "/deck")
        wait_for_app(page)
        page.get_by_role("button", name="Open this deck").click()
        wait_for_app(page)
        page.locator("h3", has_text="17 slides").first.wait_for(timeout=30_000)
        page.get_by_role("button", name="Prepare deck").click()
        page.get_by_text("All 17 slides are ready.").first.wait_for(timeout=600_000)
        page.get_by_role("button", name="Start presenting").click()
        wait_for_app(page)
        page.get_by_role("link", name=re.compile("Go to slide 1")).click()
        for i in range(17):
            if i:
                page.mouse.click(1275, 715)  # a corner with no widget: the page has the focus, not a box
                page.keyboard.press("ArrowRight")
                page.wait_for_url(re.compile(f"slide={i}(&|$)"), timeout=60_000, wait_until="commit")
            assert _counter(page) == f"{i + 1} / 17"
            wait_for_app(page, 180)
            assert "present=1" in page.url
            assert exception_texts(page) == [], (i, page.url)
            bar = page.locator('[data-testid="deck-bar"]').first.bounding_box()
            assert bar is not None and bar["width"] <= 1280 and bar["y"] < 720, (i, bar)  # the bar is on screen
            heading = page.locator("h1").first.bounding_box()
            assert heading is not None and heading["y"] < 720, (i, heading)
            page.screenshot(path=str(out / f"slide-{i + 1:02d}.png"))
    finally:
        context.close()
