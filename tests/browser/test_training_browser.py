"""Chromium: train the reverse task live on the training page, then scrub the step slider."""

import numpy as np
import pytest

from tests.browser.helpers import url_params, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

Z = "(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].z"



def antidiagonal(z) -> float:
    z = np.asarray(z, dtype=float)
    return float(np.fliplr(z).diagonal().mean())


def test_train_live_then_scrub(page, app_server):
    page.goto(app_server.url + "/")
    wait_for_app(page)
    page.goto(app_server.url + "/training")
    wait_for_app(page)
    # the recorded run opens at once: last frame, anti-diagonal cross-attention
    i = wait_plot(page, title="cross-attention · layer 0 · mean of heads · step 150")
    assert antidiagonal(page.evaluate(Z, i)) > 0.9

    # train a short run live (fewer steps keep the test quick)
    page.get_by_text("Model and training settings").click()
    steps = page.get_by_label("Steps", exact=True)
    steps.fill("40")
    steps.press("Enter")
    wait_for_app(page)
    seed = page.get_by_label("Seed", exact=True)
    seed.fill("5")
    seed.press("Enter")
    wait_for_app(page)
    assert (url_params(page).get("tr_steps"), url_params(page).get("tr_seed")) == ("40", "5")  # the settings travel
    page.get_by_role("button", name="▶ Train now").click()
    page.get_by_text("Training:").first.wait_for(timeout=60_000)  # the live progress bar
    assert page.get_by_role("button", name="Cancel").count() == 1
    # done: the evolution view shows the new run's last frame
    i = wait_plot(page, title="mean of heads · step 40", timeout=300)
    wait_for_app(page)
    last = page.evaluate(Z, wait_plot(page, title="mean of heads · step 40"))

    # scrub the step slider to the first snapshot: attention is still unformed there
    slider = page.locator(".st-key-tr_frame").locator('[role="slider"], input[type="range"]').first
    slider.focus()
    slider.press("Home")
    i = wait_plot(page, title="mean of heads · step 0")
    first = page.evaluate(Z, i)
    assert np.abs(np.asarray(first, float) - np.asarray(last, float)).max() > 0.2
    assert antidiagonal(first) < 0.4
    slider.press("ArrowRight")
    wait_plot(page, title="mean of heads · step 3")
