"""Chromium: a shared link restores the view; figures export as CSV, offline HTML and SVG."""
import csv
import io

import numpy as np
import pytest

from tests.browser.helpers import plot_z, wait_plot
from tests.conftest import CONTEXT, wait_for_app

pytestmark = pytest.mark.browser


def test_link_restores_head_scale_and_text(page, app_server):
    page.goto(app_server.url + "/heatmap?layer=2&head=5&hm_scale=log&text=Links%20restore%20views.")
    wait_for_app(page)
    page.locator("h3").filter(has_text="Layer 2, head 5").wait_for()
    z = np.asarray(plot_z(page, wait_plot(page, ytitle="query")), dtype=float)
    assert z.shape == (6, 6)  # [CLS] links restore views . [SEP]
    assert page.get_by_text("spaced by log10").count() == 1
    page.wait_for_function("() => location.search.includes('head=5') && location.search.includes('model_choice=minilm')")


def test_exports_csv_html_svg(page, app_server, browser, tmp_path):
    page.goto(app_server.url + "/heatmap")
    wait_for_app(page)
    wait_plot(page, ytitle="query")
    with page.expect_download() as info:
        page.get_by_role("button", name="CSV").first.click()
    text = open(info.value.path(), encoding="utf-8").read()
    rows = list(csv.reader(io.StringIO(text)))
    values = np.array([[float(v) for v in r[1:]] for r in rows[1:]])
    assert values.shape == (13, 13)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-4)
    assert rows[1][0] == "0:[CLS]"

    with page.expect_download() as info:
        page.get_by_role("button", name="HTML").first.click()
    html_path = tmp_path / "fig.html"
    html_path.write_bytes(open(info.value.path(), "rb").read())
    offline = browser.new_context(offline=True, **CONTEXT)
    try:
        p2 = offline.new_page()
        p2.goto(html_path.as_uri())
        p2.wait_for_function("() => document.querySelector('.js-plotly-plot')?._fullData?.length > 0", timeout=30_000)
        z = np.asarray(p2.evaluate("() => document.querySelector('.js-plotly-plot')._fullData[0].z"), dtype=float)
        np.testing.assert_allclose(z, values, atol=1e-4)
    finally:
        offline.close()

    with page.expect_download(timeout=90_000) as info:
        page.get_by_role("button", name="SVG").first.click()
    svg = open(info.value.path(), "rb").read()
    assert svg.startswith(b"<svg") and b"</svg>" in svg[-200:]


def test_batch_export_of_every_figure(page, app_server):
    import zipfile

    page.goto(app_server.url + "/heatmap")
    wait_for_app(page)
    wait_plot(page, ytitle="query")
    button = page.get_by_role("button", name="figures of this page")
    label = button.inner_text()
    n = int(label.split("All ")[1].split(" figures")[0])
    assert n >= 5  # grid, head heatmap, two focus maps, lines view
    with page.expect_download(timeout=120_000) as info:
        button.click()
    z = zipfile.ZipFile(info.value.path())
    pngs = [name for name in z.namelist() if name.endswith(".png")]
    assert len(pngs) == n
    assert all(z.read(p)[:4] == b"\x89PNG" for p in pngs)
