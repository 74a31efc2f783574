"""The complexity page in Chromium: numbers, a bad input, curves, and the live measurement
with its progress bar and a working Cancel button."""
import re
import time

import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _open(page, app_server):
    # A fresh server serves /<page> without app.py's navigation until the main script ran
    # once, so open the root first.
    page.goto(app_server.url + "/")
    page.get_by_text("Model and text").wait_for()
    page.goto(app_server.url + "/complexity")
    page.get_by_text("Attention complexity calculator").wait_for()
    page.get_by_text("Attention passes FFN at").wait_for()
    wait_for_app(page)


def _progress(page) -> str:
    return page.locator('[data-testid="stProgress"]').inner_text()


def test_calculator_and_curves(page, app_server):
    _open(page, app_server)
    main = page.locator('[data-testid="stMain"]')
    assert "9.66 GFLOP" in main.inner_text() and "n ≈ 3,072" in main.inner_text()
    box = page.get_by_label("Sequence length n", exact=True).and_(page.locator("input"))
    box.fill("3.5")
    box.press("Enter")
    page.get_by_text("must be a whole number of tokens, got 3.5").wait_for()
    box.fill("100k")
    box.press("Enter")
    page.get_by_text("holds 10 billion scores: 18.6 GiB").wait_for()  # 2e10 bytes / 2^30
    page.get_by_role("tab", name="Curves against n").click()
    page.locator(".js-plotly-plot").first.wait_for()
    info = page.evaluate("""() => { const el = document.querySelector('.js-plotly-plot');
        return {n: el._fullData.length, x: el._fullLayout.xaxis.type, y: el._fullLayout.yaxis.type,
                names: el._fullData.map(t => t.name)}; }""")
    assert info["x"] == "log" and info["y"] == "log"
    assert info["names"][:3] == ["Multi-head", "FlashAttention", "Linear attention"]


def test_measurement_progress_and_cancel(page, app_server):
    _open(page, app_server)
    page.get_by_role("tab", name="Measured here").click()
    page.get_by_text("Prediction before running").wait_for()
    page.get_by_role("button", name="Measure").click()
    # the bar moves size by size
    deadline = time.time() + 90
    done = 0
    while time.time() < deadline:
        if page.locator('[data-testid="stProgress"]').count():
            m = re.search(r"Measuring: (\d+) of 15", _progress(page))
            if m and int(m.group(1)) >= 2:
                done = int(m.group(1))
                break
        time.sleep(0.3)
    assert done >= 2, "the progress bar did not advance"
    page.get_by_role("button", name="Cancel").click()
    page.get_by_text(re.compile(r"Cancelled: \d+ of 15 sizes")).wait_for(timeout=30_000)
    stopped = int(re.search(r"Cancelled: (\d+) of 15", _progress(page)).group(1))
    assert stopped < 15
    time.sleep(3)  # nothing keeps running after Cancel
    assert f"Cancelled: {stopped} of 15" in _progress(page)
    wait_for_app(page)
    # a second, complete run, with one head per call (a quarter of the default's arithmetic, so that it finishes
    # within minutes on a machine busy with other tests too)
    heads = page.get_by_label("Heads", exact=True).and_(page.locator("input"))
    heads.fill("1")
    heads.press("Enter")
    wait_for_app(page)
    assert heads.input_value() == "1"
    page.get_by_role("button", name="Measure").click()
    page.get_by_text("Done: 15 of 15 sizes").wait_for(timeout=180_000)
    wait_for_app(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    slope = float(re.search(r"naive: fitted slope of time\s+([0-9.]+)", text).group(1))
    assert 1.0 < slope < 3.5  # a real fit happened (no timing threshold beyond sanity)
    traces = page.evaluate("""() => Array.from(document.querySelectorAll('.js-plotly-plot'))
        .map(el => el._fullData.filter(t => t.mode === 'markers').length)""")
    assert traces[-2:] == [3, 3]  # time and memory figures, one marker trace per implementation
