"""Chromium reads the server-side SVG exports with its real text boxes: the x-axis title sits below
the rotated tick labels (it touched 'because' before), and every label is inside the image."""
import pytest

from attnviz.export import chromium_path, figure_image

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(chromium_path() is None, reason="server-side export needs Chromium")]

BOXES = """() => {
  const box = e => e.getBoundingClientRect();
  const svg = box(document.documentElement);
  const title = box(document.querySelector('.g-xtitle text'));
  const ticks = [...document.querySelectorAll('.xtick text, .ytick text')].map(e => [e.textContent, box(e)]);
  return {w: svg.width, h: svg.height, title_top: title.top, title_bottom: title.bottom,
          tick_bottom: Math.max(...[...document.querySelectorAll('.xtick text')].map(e => box(e).bottom)),
          outside: ticks.filter(([t, r]) => r.left < -1 || r.top < -1 || r.right > svg.width + 1 || r.bottom > svg.height + 1)
                        .map(([t]) => t)};
}"""


@pytest.mark.parametrize("direction", ["out", "in"])
def test_focus_figure_svg_keeps_the_title_clear_of_rotated_labels(browser, minilm, tmp_path, direction):
    import streamlit  # noqa: F401  the app's plotly template is the default, as in the app

    from attnviz.extract import extract
    from attnviz.heatmap.figures import focus_figure

    r = extract(minilm, "The cat sat on the mat because it was tired.")
    path = tmp_path / "focus.svg"
    path.write_bytes(figure_image(focus_figure(r.attention[0], 1, r.tokens, direction=direction), "svg", scale=1))
    page = browser.new_page()
    try:
        page.goto(path.as_uri())
        b = page.evaluate(BOXES)
    finally:
        page.close()
    assert b["title_top"] >= b["tick_bottom"], b
    assert b["title_bottom"] <= b["h"] + 1 and b["outside"] == [], b
