"""Chromium against `streamlit run`: the sidebar's lens re-colours the grid and the heatmap, survives a
page switch and reaches the link; the Contributions page and lesson 9 render with their numbers."""
import time

import numpy as np
import pytest

from tests.browser.helpers import exception_texts, nav_to, plot_z, url_params, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _lens(page, option: str):
    group = page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').filter(has_text="ALTI contributions")
    group.get_by_text(option, exact=True).click()
    time.sleep(0.5)
    wait_for_app(page)


def _grid_src(page) -> str:
    """The grid picture's source: its link on the app's media endpoint (a layout image), else its data URI."""
    return page.evaluate("""() => { for (const el of document.querySelectorAll('.js-plotly-plot')) {
        const pic = (el._fullLayout.images || []).find(i => i.source); if (pic) return pic.source;
        const img = el._fullData.find(t => t.type === 'image'); if (img) return img.source; } return ''; }""")


def _head_z(page):
    return np.asarray(plot_z(page, wait_plot(page, ytitle="query")), dtype=float)


def test_lens_switch_recolours_grid_and_heatmap(page, app_server):
    page.goto(app_server.url + "/heatmap")
    wait_for_app(page)
    page.get_by_text("Every head").first.wait_for()
    z0, grid0 = _head_z(page), _grid_src(page)
    assert grid0

    _lens(page, "value-weighted (‖α f(x)‖)")
    page.get_by_text("Showing value-weighted").first.wait_for(timeout=60_000)
    z1, grid1 = _head_z(page), _grid_src(page)
    assert z1.shape == z0.shape and not np.allclose(z0, z1, atol=1e-3)
    np.testing.assert_allclose(z1.sum(axis=1), 1.0, atol=1e-3)
    assert grid1 and grid1 != grid0
    colorbar = page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].colorbar.title.text",
                             wait_plot(page, ytitle="query"))
    assert colorbar == "value-weighted share"

    _lens(page, "ALTI contributions")
    page.get_by_text("Showing ALTI contributions").first.wait_for(timeout=60_000)
    assert _grid_src(page) not in (grid0, grid1)
    assert page.get_by_text("heads summed").count() >= 1
    assert url_params(page).get("lens") == "ALTI"

    nav_to(page, "Entropy")
    page.get_by_text("Showing ALTI contributions").first.wait_for(timeout=60_000)
    assert not exception_texts(page)


def test_contributions_page_and_lesson_render(page, app_server):
    page.goto(app_server.url + "/contributions")
    wait_for_app(page)
    page.get_by_text("How much each token mixes in").first.wait_for(timeout=60_000)
    wait_plot(page, title="Mixing ratio per layer")
    values = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert any(v.endswith("%") for v in values)
    # another output token redraws the sources
    before = page.evaluate("() => document.body.innerText.includes(\"sources of 'sat'\")")
    box = page.get_by_role("combobox", name="Output token", exact=True).first
    box.scroll_into_view_if_needed()
    box.click()
    page.get_by_role("option", name="3: sat", exact=True).first.click()
    wait_for_app(page)
    page.get_by_text("Layer 0 alone: sources of 'sat'").first.wait_for(timeout=30_000)
    assert not before
    assert not exception_texts(page)

    nav_to(page, "9 · Not explanation")
    page.get_by_text("1 · The weights: a stripe on").first.wait_for(timeout=60_000)
    assert page.get_by_text("of what is moved").count() >= 1
    assert not exception_texts(page)


def test_a_link_s_lens_is_read_without_regard_to_case_and_an_unknown_one_is_said(page, app_server):
    page.goto(app_server.url + "/heatmap?lens=alti&layer=2")
    wait_for_app(page)
    group = page.locator('[data-testid="stSidebar"] [data-testid="stRadio"]').filter(has_text="ALTI contributions")
    assert group.locator("input:checked").evaluate("el => el.closest('label').innerText").strip() == "ALTI contributions"
    z = _head_z(page)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-3)  # a layer's ALTI rows are shares of its output
    assert page.locator("h3").filter(has_text="heads summed (ALTI)").count() == 1
    assert url_params(page).get("lens") == "ALTI"
    page.goto(app_server.url + "/heatmap?lens=gradients")
    # the note comes with the run's first elements and stays LINK_NOTE_SECONDS: read it before waiting for the rest
    toast = page.locator('[data-testid="stToast"]').filter(has_text="'gradients'")
    toast.wait_for(timeout=60_000)
    assert "attention weights" in toast.inner_text()
    wait_for_app(page)
    assert group.locator("input:checked").evaluate("el => el.closest('label').innerText").strip() == "attention weights"
    assert not exception_texts(page)
