"""Chromium at 1280 x 720 in presentation mode: figure text is large, nothing is clipped, a heading
shares a screen with its figure, and every slide of the shipped deck opens on its figure.

Reads the computed font size and the on-screen box of every text plotly drew (ticks, titles,
colour bars, legends, annotations, cell texts) and the boxes of headings and figures."""
import re

import pytest

from tests.browser.helpers import exception_texts
from tests.conftest import ARTIFACTS, CONTEXT, wait_for_app

pytestmark = pytest.mark.browser

VIEW = {"width": 1280, "height": 720}
MIN_PX = 18  # the body text's size in presentation mode
TOP_BAR = 70  # Streamlit's top navigation bar covers this much of each screen

# Every plotly text with its class, size and box relative to its figure; figures hidden in
# another tab (zero size) are skipped.
TEXTS_JS = """() => {
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((pl, i) => {
    const pr = pl.getBoundingClientRect();
    if (pr.width === 0 || pr.height === 0) return;
    const strip = (s) => (s || '').replace(/<[^>]*>/g, '');  // the theme wraps titles in <b>
    const title = strip((pl._fullLayout.title || {}).text) || strip(pl._fullLayout.yaxis?.title?.text);
    pl.querySelectorAll('text').forEach(t => {
      const r = t.getBoundingClientRect();
      if (!t.textContent.trim() || r.width === 0) return;
      let cls = t.getAttribute('class') || '';
      for (let p = t.parentElement; p && p !== pl && !cls; p = p.parentElement) cls = p.getAttribute('class') || '';
      if (t.closest('.colorbar')) cls = 'colorbar ' + cls;
      if (t.closest('.legend')) cls = 'legend ' + cls;
      out.push({plot: i, figure: title.slice(0, 40), cls, text: t.textContent.slice(0, 40),
                px: parseFloat(getComputedStyle(t).fontSize),
                left: r.left - pr.left, right: pr.right - r.right, top: r.top - pr.top, bottom: pr.bottom - r.bottom,
                x0: r.left, x1: r.right, y0: r.top, y1: r.bottom});
    });
  });
  return out;
}"""

# For every visible figure: its box (page coordinates: scrollTop added) and the nearest heading
# (h2/h3) above it in document order, with that heading's box.
LAYOUT_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const scroll = main ? main.scrollTop : 0;
  const heads = [...document.querySelectorAll('[data-testid="stMain"] h2, [data-testid="stMain"] h3')]
      .filter(h => h.getBoundingClientRect().height > 0);
  const out = [];
  document.querySelectorAll('.js-plotly-plot').forEach((pl, i) => {
    const r = pl.getBoundingClientRect();
    if (r.height === 0) return;
    let best = null;
    for (const h of heads) {
      if (h.compareDocumentPosition(pl) & Node.DOCUMENT_POSITION_FOLLOWING) best = h;
    }
    const hr = best ? best.getBoundingClientRect() : null;
    out.push({plot: i, top: r.top + scroll, bottom: r.bottom + scroll, height: r.height,
              heading: best ? best.textContent.slice(0, 50) : null, headingTop: hr ? hr.top + scroll : null});
  });
  return out;
}"""


def _present(page, app_server, path: str):
    page.set_viewport_size(VIEW)
    page.goto(app_server.url + path + ("&" if "?" in path else "?") + "present=1")
    page.wait_for_selector("text=Model and text")
    wait_for_app(page, timeout=180)


def _check_texts(page, where: str) -> list[dict]:
    texts = page.evaluate(TEXTS_JS)
    assert texts, f"{where}: no figure text found"
    small = [t for t in texts if t["px"] < MIN_PX]
    assert not small, f"{where}: figure text below {MIN_PX} px: " + "; ".join(
        f"{t['cls']} {t['text']!r} {t['px']} px in {t['figure']!r}" for t in small[:8])
    clipped = [t for t in texts if min(t["left"], t["right"], t["top"], t["bottom"]) < -1]
    assert not clipped, f"{where}: figure text outside its figure: " + "; ".join(
        f"{t['cls']} {t['text']!r} in {t['figure']!r} (l {t['left']:.0f}, r {t['right']:.0f}, "
        f"t {t['top']:.0f}, b {t['bottom']:.0f})" for t in clipped[:8])
    # a figure title never overlaps its tick labels
    for title in (t for t in texts if "gtitle" in t["cls"]):
        for tick in (t for t in texts if t["plot"] == title["plot"] and ("xtick" in t["cls"] or "ytick" in t["cls"])
                     and "colorbar" not in t["cls"]):
            overlap = min(title["x1"], tick["x1"]) - max(title["x0"], tick["x0"]) > 1 and \
                min(title["y1"], tick["y1"]) - max(title["y0"], tick["y0"]) > 1
            assert not overlap, f"{where}: title {title['text']!r} overlaps tick label {tick['text']!r}"
    # no two texts of a figure cover each other (e.g. a second, stray colour bar over the first);
    # rotated tick labels of one axis have overlapping boxes by nature, so those pairs are skipped
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            if a["plot"] != b["plot"] or (a["cls"] == b["cls"] and "tick" in a["cls"]):
                continue
            w = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
            h = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
            small = min((a["x1"] - a["x0"]) * (a["y1"] - a["y0"]), (b["x1"] - b["x0"]) * (b["y1"] - b["y0"]))
            assert not (w > 0 and h > 0 and w * h > 0.3 * small), (
                f"{where}: {a['cls']} {a['text']!r} overlaps {b['cls']} {b['text']!r} in {a['figure']!r}")
    return texts


def _check_headings(page, where: str):
    """A heading and the figure under it fit on one screen (below the top bar)."""
    for f in page.evaluate(LAYOUT_JS):
        assert f["height"] <= VIEW["height"] - TOP_BAR, f"{where}: figure {f['plot']} is {f['height']:.0f} px tall"
        if f["heading"] is None:
            continue
        span = f["bottom"] - f["headingTop"]
        assert span <= VIEW["height"] - TOP_BAR, (
            f"{where}: heading {f['heading']!r} and its figure span {span:.0f} px, more than one screen")


def _sizes(texts, kind):
    return sorted({t["px"] for t in texts if kind in t["cls"]})


@pytest.mark.parametrize("path", ["/heatmap", "/entropy", "/rollout", "/lab_steps", "/lab_multihead"])
def test_presentation_figures_are_large_and_whole(page, app_server, path):
    _present(page, app_server, path)
    texts = _check_texts(page, path)
    assert _sizes(texts, "xtick") and min(_sizes(texts, "xtick")) >= MIN_PX
    assert min(_sizes(texts, "ytick")) >= MIN_PX
    _check_headings(page, path)


def test_presentation_heatmap_cells_titles_and_colour_bar(page, app_server):
    _present(page, app_server, "/heatmap")
    texts = _check_texts(page, "/heatmap")
    assert min(_sizes(texts, "gtitle")) >= MIN_PX  # the token-focus figures' titles
    assert min(_sizes(texts, "colorbar")) >= MIN_PX
    # the head heatmap: every token of the default text is a tick label at >= 18 px
    ticks = [t for t in texts if "ytick" in t["cls"] and t["figure"].startswith("query")]
    assert "[CLS]" in {t["text"] for t in ticks} and min(t["px"] for t in ticks) >= MIN_PX


def test_presentation_lab_cell_values(page, app_server):
    _present(page, app_server, "/lab_steps")
    texts = _check_texts(page, "/lab_steps")
    cells = [t for t in texts if "heatmap-label" in t["cls"] or "textpoint" in t["cls"]]
    assert cells and min(t["px"] for t in cells) >= MIN_PX


def test_presentation_complexity_every_tab_and_metrics(page, app_server):
    _present(page, app_server, "/complexity")
    # the metric values wrap instead of being cut with an ellipsis ("9.66 GFL...")
    cut = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
        .filter(m => { const d = m.querySelector('div') || m; return d.scrollWidth > d.clientWidth + 1; })
        .map(m => m.textContent)""")
    assert not cut, f"metric values cut: {cut}"
    tabs = page.get_by_role("tab")
    seen = 0
    for i in range(min(tabs.count(), 4)):
        tabs.nth(i).click()
        wait_for_app(page)
        if page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.getBoundingClientRect().width > 0)"):
            _check_texts(page, f"/complexity tab {i}")
            seen += 1
    assert seen >= 2


# The first figure on screen: its box in the window, and how many page titles (h1) are shown.
FIRST_FIGURE_JS = """() => {
  const shown = [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.getBoundingClientRect().height > 0);
  const h1 = [...document.querySelectorAll('[data-testid="stMain"] h1')].filter(h => h.getBoundingClientRect().height > 0);
  const r = shown.length ? shown[0].getBoundingClientRect() : null;
  return {top: r && r.top, height: r && r.height, titles: h1.length};
}"""
SLIDE_IS = "() => document.querySelector('[data-testid=\"deck-bar\"]')?.dataset.slide === '%d'"
VISIBLE = 240  # px of the first figure (or all of a shorter one) on the first screen


def test_every_shipped_slide_opens_on_its_figure_at_1280x720(browser, app_server):
    """At a projector's 1280 x 720: "Prepare deck" readies every slide, then every slide is presented in
    turn with the arrow key. Each opens on its first figure, at least 240 px of it (all of a shorter one)
    on the first screen, under a bar naming the slide; the page's title, explanation and controls are
    folded away and the bar's "Title and controls" brings them back. Screenshots in test-artifacts."""
    context = browser.new_context(viewport=VIEW, **CONTEXT)
    page = context.new_page()
    page.set_default_timeout(120_000)
    out = ARTIFACTS / "deck-1280x720"
    out.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(app_server.url + "/deck")
        wait_for_app(page)
        page.get_by_role("button", name="Open this deck").click()
        wait_for_app(page)
        heading = page.locator("[data-testid=stMain] h3", has_text=re.compile(r"^\d+ slides$")).first
        heading.wait_for(timeout=30_000)
        n = int(heading.inner_text().split()[0])
        titles = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stDataFrame"] [role="row"]')]
            .slice(1).map(r => ([...r.querySelectorAll('[role="gridcell"], td')][1] || {}).textContent || '')""")
        page.get_by_role("button", name="Prepare deck").click()
        page.get_by_text(f"All {n} slides are ready.").first.wait_for(timeout=600_000)
        page.get_by_role("button", name="Start presenting").click()
        wait_for_app(page)
        page.get_by_role("link", name=re.compile("Go to slide 1")).click()
        measured = []
        for i in range(n):
            if i:
                page.evaluate("() => document.activeElement && document.activeElement.blur()")
                page.keyboard.press("ArrowRight")
            page.wait_for_function(SLIDE_IS % i, timeout=180_000)
            wait_for_app(page, 180)
            bar = page.locator('[data-testid="deck-bar"]').first
            assert re.search(rf"\b{i + 1} / {n}\b", bar.inner_text()), (i, bar.inner_text())
            if i < len(titles):  # the bar names what the slide shows
                assert titles[i] and titles[i].strip() in bar.inner_text(), (i, titles[i])
            box = bar.bounding_box()
            assert box is not None and TOP_BAR <= box["y"] and box["y"] + box["height"] < 200, (i, box)
            assert "present=1" in page.url and exception_texts(page) == [], (i, page.url)
            fig = page.evaluate(FIRST_FIGURE_JS)
            page.screenshot(path=str(out / f"slide-{i + 1:02d}.png"))
            assert fig["top"] is not None, f"slide {i + 1} ({page.url}) shows no figure"
            measured.append((i + 1, round(fig["top"]), round(fig["height"])))
            assert TOP_BAR <= fig["top"] and fig["top"] + min(fig["height"], VISIBLE) <= VIEW["height"], (
                f"slide {i + 1} ({page.url}): its first figure starts {fig['top']:.0f} px down, "
                f"{fig['height']:.0f} px tall")
            assert fig["titles"] == 0, f"slide {i + 1}: the page's title is not folded away"
        print("first figure on each slide (slide, top, height):", measured)
        # the toggle brings the page's title and controls back; another slide folds them away again
        page.locator(".st-key-deck_controls label").first.click()
        wait_for_app(page)
        shown = page.evaluate(FIRST_FIGURE_JS)
        assert shown["titles"] == 1 and shown["top"] > measured[-1][1]
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press("Home")
        page.wait_for_function(SLIDE_IS % 0)
        wait_for_app(page)
        assert page.evaluate(FIRST_FIGURE_JS)["titles"] == 0
        # and its switch shows what the slide does: off (the browser still held it on from the slide before)
        assert not page.locator(".st-key-deck_controls input[type=checkbox]").first.is_checked()
    finally:
        context.close()
