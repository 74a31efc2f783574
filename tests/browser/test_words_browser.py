"""Chromium: the sidebar's Word level switch merges word pieces on the heatmap, goes into the link,
and is kept when the visitor moves to the entropy page, through a page that does not read it (greyed there)."""
import time

import numpy as np
import pytest

from tests.browser.helpers import exception_texts, nav_to, plot_z, set_sidebar_text, url_params, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

TEXT = "Tokenization of unbelievably long words."


def test_word_level_switch_merges_pieces_and_follows_the_visitor(page, app_server):
    page.goto(app_server.url + "/heatmap")
    wait_for_app(page)
    set_sidebar_text(page, TEXT)
    wait_for_app(page)
    pieces = np.asarray(plot_z(page, wait_plot(page, ytitle="query")), dtype=float)
    page.locator('[data-testid="stSidebar"] .st-key-words').get_by_text("Word level").click()
    time.sleep(0.5)
    wait_for_app(page)
    deadline = time.time() + 60
    while time.time() < deadline:
        words = np.asarray(plot_z(page, wait_plot(page, ytitle="query")), dtype=float)
        if words.shape != pieces.shape:
            break
        time.sleep(0.5)
    assert pieces.shape == (13, 13) and words.shape == (8, 8), (pieces.shape, words.shape)
    np.testing.assert_allclose(words.sum(axis=1), 1.0, atol=1e-4)
    assert page.get_by_text("13 tokens merged into 8 words").count() >= 1
    assert url_params(page).get("words") == "1"
    nav_to(page, "Entropy")
    wait_for_app(page)
    page.get_by_text("merged into 8 words").first.wait_for(timeout=60_000)
    switch = page.locator('[data-testid="stSidebar"] .st-key-words input')
    assert switch.is_enabled() and switch.is_checked()
    nav_to(page, "Query · key")  # a page that shows word pieces: the switch is greyed and keeps its value
    wait_for_app(page)
    page.get_by_text("This page shows word pieces").first.wait_for(timeout=60_000)
    assert switch.is_disabled() and switch.is_checked()
    assert url_params(page).get("words") == "1"
    nav_to(page, "Rollout")
    wait_for_app(page)
    page.get_by_text("merged into 8 words").first.wait_for(timeout=60_000)
    assert switch.is_enabled() and switch.is_checked()
    assert not exception_texts(page)
