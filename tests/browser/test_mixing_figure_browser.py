"""Chromium: the Contributions page's mixing figure keeps its legend clear of its x-axis title, in a wide and a
narrower window and in presentation mode at 1280 x 720 (larger fonts, the legend on two rows)."""
import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

BOXES_JS = """() => {
  const p = [...document.querySelectorAll('.js-plotly-plot')]
      .find(e => ((e._fullLayout.title || {}).text || '').includes('Mixing ratio per layer'));
  if (!p) return null;
  const box = (s) => { const b = p.querySelector(s).getBoundingClientRect();
                       return {left: b.left, top: b.top, right: b.right, bottom: b.bottom}; };
  return {xtitle: box('.xtitle'), ticks: box('.xaxislayer-above'), legend: box('.legend'), figure: box('.main-svg')};
}"""


@pytest.mark.parametrize("size,present", [((1400, 1000), False), ((1280, 800), False), ((1280, 720), True)])
def test_mixing_figure_legend_stays_clear_of_the_axis_title(page, app_server, size, present):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(app_server.url + "/contributions" + ("?present=1" if present else ""))
    page.wait_for_selector("text=Model and text")
    wait_for_app(page, timeout=180)
    boxes = page.evaluate(BOXES_JS)
    assert boxes, "no mixing figure"
    x, legend, ticks, figure = boxes["xtitle"], boxes["legend"], boxes["ticks"], boxes["figure"]
    assert legend["top"] >= x["bottom"] + 4, boxes  # below the title, with a gap
    assert legend["top"] >= ticks["bottom"] + 4, boxes
    assert legend["bottom"] <= figure["bottom"] + 1, boxes  # and inside the figure
