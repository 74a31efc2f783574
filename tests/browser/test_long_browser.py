"""Chromium: the Long inputs page records the bundled long text on the default model (MiniLM, capped at its 512
positions), opens a head and zooms; the zoomed figure holds the exact weights of the same recording made here."""
import numpy as np
import pytest

from tests.browser.helpers import choose, exception_texts, open_path, set_number, start_job, url_params, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _zoom(page) -> tuple[np.ndarray, list, list]:
    i = wait_plot(page, title="Zoom: queries")
    data = page.evaluate("(i) => { const d = document.querySelectorAll('.js-plotly-plot')[i]._fullData[0];"
                         " return [d.z, d.x, d.y]; }", i)
    return np.asarray(data[0], dtype=float), data[1], data[2]


def _box(page) -> list:
    """[x0, x1, y0, y1] of the red box on the open head's overview (the zoom window, keys across, queries down)."""
    i = wait_plot(page, title="L3 H5 (key head 5), pooled")
    return page.evaluate("(i) => { const s = document.querySelectorAll('.js-plotly-plot')[i]._fullLayout.shapes[0];"
                         " return [s.x0, s.x1, s.y0, s.y1]; }", i)


def test_record_the_bundled_text_open_a_head_and_zoom(page, app_server, minilm):
    from attnviz.long.record import record
    from attnviz.ui.long.inputs import BUNDLED

    open_path(page, app_server, "/long")
    page.get_by_text("reads at most").first.wait_for()
    page.get_by_text("Bundled long text (~5,000 words)").click()
    wait_for_app(page)
    page.get_by_text("the first 512 are recorded").first.wait_for()
    start_job(page, "▶ Record")
    page.get_by_text("Recorded 512 tokens").first.wait_for(timeout=120_000)
    wait_for_app(page, 120)
    assert wait_plot(page, title="All 6 × 12 heads, 64 × 64 tiles each (mean per tile)") == 0
    # every tile is drawn square: pixels per column and per row of the mosaic agree
    px_col, px_row = page.evaluate("() => { const L = document.querySelectorAll('.js-plotly-plot')[0]._fullLayout;"
                                   " return [L.xaxis._length / L.xaxis._categories.length,"
                                   " L.yaxis._length / L.yaxis._categories.length]; }")
    assert px_row == pytest.approx(px_col, rel=0.02), (px_col, px_row)
    assert page.get_by_text("Each cell is the mean of a block").count() >= 1
    choose(page, "Layer", "3")
    choose(page, "Head", "5")
    set_number(page, "Window size", 32)
    set_number(page, "Query start", 300)
    set_number(page, "Key start", 280)
    z, x, y = _zoom(page)
    la = record(minilm, BUNDLED.read_text(encoding="utf-8"), max_tokens=512)
    # the server and this process each run the float32 forward, whose sums may run in other orders (threads shared
    # with the browser, another kernel): a few units in the sixth significant digit apart (seen: 1.3e-6 on 0.436)
    close = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(z, la.window(3, 5, 300, 332, 280, 312), **close)
    assert x[0].startswith("280 ") and y[0].startswith("300 ")
    assert _box(page) == [279.5, 311.5, 299.5, 331.5]
    set_number(page, "Key start", 0)  # the zoom moves: recomputed at full resolution
    z, x, _ = _zoom(page)
    assert x[0].startswith("0 ")
    np.testing.assert_allclose(z, la.window(3, 5, 300, 332, 0, 32), **close)
    assert _box(page) == [-0.5, 31.5, 299.5, 331.5]  # the overview's red box moved with it (rerun with the zoom)
    assert (url_params(page).get("lg_zq"), url_params(page).get("lg_zk")) == ("300", "0")  # the zoom is in the link
    set_number(page, "Query start", 511)  # past the last whole window: the box shows the start the zoom uses
    assert page.get_by_label("Query start", exact=True).first.input_value() == "480"
    assert page.get_by_text("was set to 480").count() == 1
    assert _box(page) == [-0.5, 31.5, 479.5, 511.5]
    # the views below are tabs: only the open one is drawn, and it goes into the link
    assert page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].filter(e => "
                         "(e._fullLayout.title.text || '').includes('Attention vs distance')).length") == 0
    page.get_by_role("tab", name="Distance").click()
    wait_for_app(page)
    wait_plot(page, title="Attention vs distance, layer 3")
    assert url_params(page).get("lg_tab") == "Distance"
    assert exception_texts(page) == []
