"""Chromium: the shipped deck opens, presents in presentation mode and steps with the keyboard (no key
press lost, also while a slide is still opening), the presenter view in a second tab follows with its
clock; the deck and its unsaved edits survive presenting, End and a page load; adding a view from the
sidebar lands in the deck; Move and the slide table count from 1."""
import json
import re
import time
import uuid

import pytest

from tests.browser.helpers import PlaywrightTimeout, exception_texts, nav_to
from tests.conftest import CONTEXT, wait_for_app

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1280, "height": 720}
SLIDE_JS = "() => { const b = document.querySelector('[data-testid=\"deck-bar\"]'); return b ? +b.dataset.slide : null; }"
SIDEBAR_JS = """() => { const s = document.querySelector('[data-testid="stSidebar"]');
  return s ? s.getBoundingClientRect().right : 0; }"""


def _counter(page) -> str:
    bar = page.locator('[data-testid="deck-bar"]').first
    bar.wait_for(timeout=60_000)
    return re.search(r"\d+ / \d+", bar.inner_text()).group(0)


def _on_slide(page, i: int, timeout: float = 180) -> None:
    """Wait until slide i (from 0) is on screen and the app has settled; then it is still slide i (a
    key press counted twice, or one left over, would have moved on)."""
    page.wait_for_function(f"() => ({SLIDE_JS})() === {i}", timeout=timeout * 1000)
    wait_for_app(page, timeout)
    assert page.evaluate(SLIDE_JS) == i


def _keys(page, *keys: str) -> None:
    """Press keys one right after the other, with the page (not a box) focused."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    for key in keys:
        page.keyboard.press(key)


def _open_shipped(page, app_server, n: int = 16) -> None:
    page.goto(app_server.url + "/deck")
    wait_for_app(page)
    page.get_by_role("button", name="Open this deck").click()
    wait_for_app(page)
    page.locator("[data-testid=stMain] h3", has_text=f"{n} slides").first.wait_for(timeout=90_000)


def test_present_the_shipped_deck_with_the_keyboard(browser, app_server):
    """A lecturer's key presses are never lost: two presses in a row (the second while the first slide
    is still opening) move two slides, a press during a rerun of the slide counts, Page Down / Page Up
    (a clicker) and Home work, and the End key comes back to the Deck page. The presenter view follows
    with its clock; the sidebar is folded away while presenting and back after End."""
    context = browser.new_context(viewport=PROJECTOR, **CONTEXT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        _open_shipped(page, app_server)
        page.get_by_role("button", name="Start presenting").click()
        wait_for_app(page)
        presenter_href = page.get_by_role("link", name=re.compile("Presenter view")).first.get_attribute("href")
        page.get_by_role("link", name=re.compile("Go to slide 1")).click()
        _on_slide(page, 0)
        assert _counter(page) == "1 / 16" and "present=1" in page.url and "/lab_variants" in page.url
        assert page.evaluate(SIDEBAR_JS) <= 0  # folded away

        notes = context.new_page()
        notes.goto(app_server.url + presenter_href)
        notes.get_by_text("1 / 16 · The bottleneck").first.wait_for(timeout=90_000)
        notes.get_by_text("Next · 2: Queries, keys and values").first.wait_for(timeout=60_000)
        notes.locator('[data-testid="stMetric"]', has_text="Elapsed").first.wait_for(timeout=90_000)

        _keys(page, "ArrowRight", "ArrowRight")  # the second press while slide 2 is opening
        _on_slide(page, 2)
        assert _counter(page) == "3 / 16" and "/query_key" in page.url
        # a press while the slide itself reruns (its Title and controls toggle)
        page.locator(".st-key-deck_controls label").first.click()
        _keys(page, "ArrowRight")
        _on_slide(page, 3)
        assert "/lab_scaling" in page.url
        _keys(page, "ArrowLeft", "ArrowRight", "ArrowRight", "PageDown", "PageUp")  # 3 → 2 → 3 → 4 → 5 → 4
        _on_slide(page, 4)
        assert _counter(page) == "5 / 16" and "/lab_temperature" in page.url
        notes.get_by_text("5 / 16 · Temperature").first.wait_for(timeout=60_000)
        assert notes.get_by_text("Move the temperature towards 0.1").count() >= 1
        _keys(page, "Home")
        _on_slide(page, 0)
        _keys(page, "End")
        page.locator("[data-testid=stMain] h3", has_text="16 slides").first.wait_for(timeout=60_000)
        wait_for_app(page)
        assert "/deck" in page.url and page.locator('[data-testid="deck-bar"]').count() == 0
        # presentation mode is over: the sidebar opens again (a moment after the page, on a busy server)
        page.wait_for_function(f"() => ({SIDEBAR_JS})() > 0", timeout=30_000)
        assert not exception_texts(page) and not exception_texts(notes)
    finally:
        context.close()


def test_presenting_keeps_the_deck_and_its_unsaved_edits(browser, app_server):
    """Open the shipped deck, rename it and add a view (17 slides), present, step, End: the deck page
    still has all 17 slides and the new title, says where the deck is kept, and a page reload, a slide's
    link opened in another browser and its End all bring the same deck back."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, **CONTEXT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        _open_shipped(page, app_server)
        title = page.get_by_role("textbox", name="Deck title")
        title.fill("My lecture")
        title.press("Enter")
        wait_for_app(page)
        nav_to(page, "Entropy", "Analyse")
        box = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]', has_text="Add this view to the deck")
        box.first.click()
        box.first.get_by_label("Slide title").fill("Focused heads")
        box.first.get_by_role("button", name="Add this view").click()
        # the caption's count stays; the "Added slide" line before it shows for one rerun only
        try:
            box.first.get_by_text(re.compile(r"The deck has 17 slides")).first.wait_for(timeout=90_000)
        except PlaywrightTimeout:  # say what the box shows instead (an error from the addition, or the old count)
            raise AssertionError(f"the deck box shows: {box.first.inner_text(timeout=5_000)!r}") from None
        nav_to(page, "Lecture deck", "Learn")
        page.locator("[data-testid=stMain] h3", has_text="17 slides").first.wait_for(timeout=90_000)
        page.get_by_role("button", name="Start presenting").click()
        wait_for_app(page)
        page.get_by_role("link", name=re.compile("Go to slide 1")).click()
        _on_slide(page, 0)
        assert _counter(page) == "1 / 17"
        slide_url = page.url
        _keys(page, "ArrowRight")
        _on_slide(page, 1)
        page.locator(".st-key-deck_end a").click()

        def same_deck(pg):
            pg.locator("[data-testid=stMain] h3", has_text="17 slides").first.wait_for(timeout=60_000)
            wait_for_app(pg)
            assert pg.get_by_role("textbox", name="Deck title").input_value() == "My lecture"
            assert pg.get_by_text("The deck is empty").count() == 0
            assert pg.get_by_text(re.compile("Kept as a working copy on this server's disk")).count() == 1

        same_deck(page)
        assert re.search(r"[?&]deck=[A-Za-z0-9_-]{8,}", page.url)
        page.reload()
        same_deck(page)

        other = browser.new_context(viewport=PROJECTOR, **CONTEXT).new_page()  # another browser: nothing in common but the link
        other.set_default_timeout(120_000)
        try:
            other.goto(slide_url)
            _on_slide(other, 0)
            assert _counter(other) == "1 / 17"
            other.locator(".st-key-deck_end a").click()
            same_deck(other)
        finally:
            other.context.close()
        assert not exception_texts(page)
    finally:
        context.close()


def test_add_this_view_from_the_sidebar(page, app_server):
    """Typing the slide's title and notes sends nothing to the server (no rerun moves the sidebar under the pointer
    before the click); "Add this view" adds the view with both, and empties the boxes."""
    from attnviz.decks import store

    notes = f"Point at head 3. ({uuid.uuid4().hex})"
    sent = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(payload)))
    page.goto(app_server.url + "/entropy")
    wait_for_app(page)
    box = page.locator('[data-testid="stSidebar"] [data-testid="stExpander"]', has_text="Add this view to the deck")
    box.first.click()
    wait_for_app(page, settle=0.5)
    sent.clear()
    box.first.get_by_label("Slide title").fill("Focused heads")
    box.first.locator("textarea").fill(notes)
    box.first.get_by_label("Slide title").click()  # the notes box loses the focus: its value is committed
    time.sleep(1.0)
    assert not sent, f"{len(sent)} message(s) sent while typing"
    # the confirmation is shown for one run only (a later run may take it away before a poll would see it): the page
    # notes whether it ever appeared
    page.evaluate("""() => { window.__added = false;
      const seen = new MutationObserver(() => {
        if (document.body.textContent.includes('Added slide 1: Focused heads')) { window.__added = true; seen.disconnect(); }
      });
      seen.observe(document.body, {childList: true, subtree: true, characterData: true}); }""")
    box.first.get_by_role("button", name="Add this view").click()
    time.sleep(0.5)
    wait_for_app(page)
    page.get_by_text("The deck has 1 slide:").first.wait_for(timeout=60_000)
    page.wait_for_function("() => window.__added", timeout=60_000)
    assert box.first.get_by_label("Slide title").input_value() == "" and box.first.locator("textarea").input_value() == ""
    copies = [f for f in store.folder().glob("*.json") if notes in f.read_text(encoding="utf-8")]
    assert len(copies) == 1
    slides = json.loads(copies[0].read_text(encoding="utf-8"))["slides"]
    assert [(x["title"], x["notes"]) for x in slides] == [("Focused heads", notes)]
    assert slides[0]["page"] == "entropy"


def _choose(page, label: str, option: str) -> None:
    box = page.get_by_role("combobox", name=label).first
    box.scroll_into_view_if_needed()
    box.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    time.sleep(0.3)
    wait_for_app(page)


def test_move_shows_the_moved_slide_and_the_table_counts_from_one(page, app_server):
    _open_shipped(page, app_server)
    _choose(page, "Move slide", "3: One row of attention inside a real BERT")
    _choose(page, "to position", "1")
    page.get_by_role("button", name="Move", exact=True).click()
    time.sleep(0.5)
    wait_for_app(page)
    shown = page.get_by_role("combobox", name="Move slide").first.input_value()
    assert shown == "1: One row of attention inside a real BERT"  # the moved slide at its new place
    rows = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stDataFrame"] [role="row"]')].slice(0, 3)
        .map(r => [...r.querySelectorAll('[role="gridcell"], [role="columnheader"], [role="rowheader"], td, th')]
        .map(c => c.textContent))""")
    assert rows[0][:2] == ["slide", "title"]
    assert rows[1][:2] == ["1", "One row of attention inside a real BERT"] and rows[2][:2] == [
        "2", "The bottleneck, and Bahdanau and Luong scores"]


def test_a_refused_title_edit_in_the_table_shows_the_slide_as_it_is(page, app_server):
    """Typing a 400-character title into the slide table is refused with a sentence, and the table then shows the
    title the slide kept, not the refused text; the speaker notes come before the long links."""
    _open_shipped(page, app_server)
    rows = lambda: page.evaluate("""() => [...document.querySelectorAll('[data-testid="stDataFrame"] [role="row"]')]
        .slice(0, 2).map(r => [...r.querySelectorAll('[role="gridcell"], [role="columnheader"], [role="rowheader"], td, th')]
        .map(c => c.textContent))""")
    header, first = rows()
    assert header[:4] == ["slide", "title", "speaker notes", "view (link)"], header
    kept = first[1]
    grid = page.locator('[data-testid="stDataFrame"]').first
    box = grid.bounding_box()
    x, y = box["x"] + 120, box["y"] + 35 + 17  # the first row's title cell: right of the slide numbers, under the header
    page.mouse.dblclick(x, y)
    editor = page.locator("textarea.gdg-input, .gdg-growing-entry textarea, [data-testid='data-grid-overlay-editor'] textarea").first
    editor.wait_for(timeout=10_000)
    editor.fill("x" * 400)
    editor.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)
    alerts = page.locator('[data-testid="stAlert"]')
    said = [alerts.nth(i).inner_text() for i in range(alerts.count())]
    assert any("400 characters long; at most 200 fit on a slide. The slide keeps what it had." in a for a in said), said
    assert rows()[1][1] == kept
    assert not exception_texts(page)
