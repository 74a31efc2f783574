"""Chromium: every number printed in the cells of lab 1's matrices reads at least 4.5:1 (WCAG AA) against the
cell drawn behind it, in presentation mode at 1280 x 720 and in the normal view: measured on the screenshot."""
import io

import pytest
from PIL import Image

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

# every cell text of every heatmap (plotly's own cell labels or a text layer over the cells), with its box
# and colour, after scrolling its figure into view
CELL_TEXTS_JS = """(i) => {
  const p = document.querySelectorAll('.js-plotly-plot')[i];
  p.scrollIntoView({block: 'center'});
  return [...p.querySelectorAll('.heatmaplayer text, .textpoint text')].filter(t => t.textContent.trim()).map(t => {
    const b = t.getBoundingClientRect();
    return {text: t.textContent, fill: getComputedStyle(t).fill, left: b.left, top: b.top, bottom: b.bottom};
  });
}"""


def _luminance(rgb) -> float:
    def channel(v):
        c = v / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(v) for v in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a, b) -> float:
    """WCAG 2's contrast ratio, written out here (independent of the app's own)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _rgb(css: str) -> tuple[int, int, int]:
    return tuple(int(v) for v in css.replace("rgb(", "").replace(")", "").split(",")[:3])


@pytest.mark.parametrize("present", [True, False])
def test_lab_matrix_numbers_contrast_with_their_cells(page, app_server, present):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(app_server.url + "/lab_steps" + ("?present=1" if present else ""))
    page.wait_for_selector("text=Model and text")
    wait_for_app(page, timeout=180)
    n_plots = page.evaluate("() => document.querySelectorAll('.js-plotly-plot').length")
    checked, worst = 0, []
    for i in range(min(n_plots, 4)):  # the four steps' matrices
        texts = page.evaluate(CELL_TEXTS_JS, i)
        shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
        for t in texts:
            # the cell's own colour, just left of the number (cells are much wider than their numbers)
            x, y = int(t["left"]) - 6, int((t["top"] + t["bottom"]) / 2)
            background = shot.getpixel((x, y))
            ratio = contrast_ratio(_rgb(t["fill"]), background)
            checked += 1
            if ratio < 4.5:
                worst.append((i, t["text"], t["fill"], background, round(ratio, 2)))
    assert checked >= 4 * 9, checked  # 3 x 3 scores, scaled scores, weights; 3 x 4 outputs
    assert not worst, worst
