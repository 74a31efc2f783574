"""Chromium: every control shows the value its figures were computed with, after a run that stopped on a
plain message (the sidebar's text cleared, then typed back) and after the Show lens went to ALTI and
back. The browser forgets a control that a run did not draw; these round trips are where it showed
its default (residual 0.00, layer 0, head 0) while the figures and the URL kept the real values."""
import time

import pytest

from tests.browser.helpers import box_value, choose, open_path, set_sidebar_text, url_params
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat because it was tired."


def slider_text(page, label: str) -> str:
    """The value a Streamlit slider shows on its thumb."""
    box = page.locator('[data-testid="stSlider"]', has_text=label).first
    return box.locator('[data-testid="stSliderThumbValue"]').first.inner_text()


def figure_titles(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                         ".map(el => ((el._fullLayout || {}).title || {}).text || '')")


def subheaders(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stMain\"] h3')].map(h => h.innerText.trim())")


def empty_text_round_trip(page) -> None:
    set_sidebar_text(page, "")
    page.get_by_text("The text is empty").first.wait_for()
    assert page.locator('[data-testid="stMain"] .js-plotly-plot').count() == 0
    set_sidebar_text(page, TEXT)


def test_rollout_sliders_after_the_text_is_cleared_and_typed_back(page, app_server):
    open_path(page, app_server, "/rollout?text=" + TEXT.replace(" ", "+"))
    assert (slider_text(page, "Residual weight w"), slider_text(page, "After layer")) == ("0.50", "5")
    empty_text_round_trip(page)
    params = url_params(page)
    assert (params["ro_residual"], params["ro_layer"]) == ("0.5", "5")
    assert any("Rollout through layers 0–5" in t for t in figure_titles(page)), figure_titles(page)
    assert slider_text(page, "Residual weight w") == "0.50"  # what the figures use, not the slider's 0.00
    assert slider_text(page, "After layer") == "5"
    # the next touch starts from the value shown: one step right is 0.55 (it applied 0.05 before)
    thumb = page.locator('[data-testid="stSlider"]', has_text="Residual weight w").get_by_role("slider").first
    thumb.focus()
    thumb.press("ArrowRight")
    time.sleep(0.5)
    wait_for_app(page)
    assert url_params(page)["ro_residual"] == "0.55" and slider_text(page, "Residual weight w") == "0.55"
    assert url_params(page)["ro_layer"] == "5" and slider_text(page, "After layer") == "5"


def test_heatmap_layer_and_head_after_the_text_is_cleared_and_typed_back(page, app_server):
    open_path(page, app_server, "/heatmap?text=" + TEXT.replace(" ", "+"))
    choose(page, "Layer", "3")
    choose(page, "Head", "7")
    assert "Layer 3, head 7" in subheaders(page)
    empty_text_round_trip(page)
    params = url_params(page)
    assert (params["layer"], params["head"]) == ("3", "7")
    assert "Layer 3, head 7" in subheaders(page), subheaders(page)
    assert (box_value(page, "Layer"), box_value(page, "Head")) == ("3", "7")


def test_heatmap_head_after_the_lens_goes_to_alti_and_back(page, app_server):
    open_path(page, app_server, "/heatmap?text=" + TEXT.replace(" ", "+"))
    choose(page, "Layer", "3")
    choose(page, "Head", "7")
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_text("ALTI contributions").click()
    time.sleep(0.5)
    wait_for_app(page, timeout=180)
    assert "Layer 3, heads summed (ALTI)" in subheaders(page), subheaders(page)
    assert box_value(page, "Head") == "all, summed" and url_params(page)["head"] == "7"
    sidebar.get_by_text("attention weights").click()
    time.sleep(0.5)
    wait_for_app(page)
    assert "Layer 3, head 7" in subheaders(page), subheaders(page)
    assert (box_value(page, "Layer"), box_value(page, "Head")) == ("3", "7")
    assert (url_params(page)["layer"], url_params(page)["head"]) == ("3", "7")
