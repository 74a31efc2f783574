"""Chromium: the Trust the view? page runs its background job on the default model and draws the verdict
and every figure, with no exception box."""
import pytest

from attnviz.attribution.importance import METHODS
from tests.browser.helpers import exception_texts, open_path, plot_z, wait_plot
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def test_run_draws_the_verdict_and_the_figures(page, app_server):
    open_path(page, app_server, "/trust?trust_steps=16")
    page.wait_for_selector("text=Press Run", timeout=60_000)
    page.get_by_role("button", name="▶ Run").click()
    page.wait_for_selector("text=For this input,", timeout=300_000)
    wait_for_app(page, 120)
    verdict = page.get_by_text("For this input,").first.inner_text()
    assert "tracks the output best" in verdict and "comprehensiveness" in verdict
    i = wait_plot(page, title="Each method's token scores")
    z = plot_z(page, i)
    assert len(z) == len(METHODS) and all(-1 <= v <= 1 for row in z for v in row)  # each row scaled to 1
    assert max(abs(v) for v in z[list(METHODS).index("integrated gradients")]) == pytest.approx(1.0)
    for title in ("Rank agreement", "Deletion", "Insertion", "Trained vs randomised"):
        wait_plot(page, title=title)
    assert exception_texts(page) == []
