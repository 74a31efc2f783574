"""Chromium: every tab of the positional-encodings page renders and reacts, with real numbers."""
from __future__ import annotations

import math
import time

import pytest

from tests.browser.helpers import box_value, choose, set_number, wait_plot
from tests.conftest import wait_for_app

TRACE = "(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData"


def _open_tab(page, label: str):
    page.get_by_role("tab", name=label, exact=True).click()
    time.sleep(0.3)
    wait_for_app(page)


@pytest.mark.browser
def test_positional_tabs_in_chromium(app_server, page):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app_server.url + "/positional")
    wait_for_app(page)

    # Sinusoidal: the table against the formula
    i = wait_plot(page, title="PE table: 128 positions x 128 dimensions")
    z = page.evaluate(TRACE, i)[0]["z"]
    assert z[1][0] == pytest.approx(math.sin(1), abs=1e-6) and z[5][1] == pytest.approx(math.cos(5), abs=1e-6)
    assert page.get_by_text("(rounding only)").count() == 1

    # Learned: MiniLM's 512 x 384 table as one pooled heatmap
    _open_tab(page, "Learned")
    i = wait_plot(page, title="Learned: minilm", timeout=90)
    z = page.evaluate(TRACE, i)[0]["z"]
    assert (len(z), len(z[0])) == (256, 192)
    page.get_by_text("Positions past 511 do not exist.").wait_for()

    # RoPE: moving the position slider turns the pairs (pair 0 by 1 radian per position)
    _open_tab(page, "RoPE")
    i = wait_plot(page, title="Position m = 3")
    arrow = page.evaluate(TRACE, i)[2]  # circle, arc of pair 0, arrow of pair 0
    assert math.atan2(arrow["y"][1], arrow["x"][1]) == pytest.approx(3.0, abs=1e-3)
    slider = page.locator('.st-key-pe_rope_m input[type="range"]').first
    slider.focus()
    page.keyboard.press("ArrowRight")
    wait_for_app(page)
    i = wait_plot(page, title="Position m = 4")
    arrow = page.evaluate(TRACE, i)[2]
    assert math.atan2(arrow["y"][1], arrow["x"][1]) == pytest.approx(4 - 2 * math.pi, abs=1e-3)
    wait_plot(page, title="q_m · k_n / d_head against the distance")

    # ALiBi: the slopes of 8 heads
    _open_tab(page, "ALiBi")
    i = wait_plot(page, title="Slopes for 8 heads")
    ys = page.evaluate(TRACE, i)[0]["y"]
    assert ys == pytest.approx([2.0 ** -k for k in range(1, 9)])
    # the head box follows the head count: head 2 of 8 (slope 2^-3) stays head 2 of 3 (slope 2^-2)
    choose(page, "Head", "head 2: slope 0.125 = 2^-3")
    set_number(page, "Heads", 3)
    assert box_value(page, "Head") == "head 2: slope 0.25 = 2^-2"
    set_number(page, "Heads", 64)
    assert box_value(page, "Head") == "head 2: slope 0.7711 = 2^-0.375"
    set_number(page, "Heads", 8)

    # Why positions: no positions -> exactly permuted; sinusoidal -> not
    _open_tab(page, "Why positions")
    wait_plot(page, title="③ Computed on the shuffle")
    page.get_by_text("Without positions, shuffling the words only shuffles").wait_for()
    page.get_by_text("sinusoidal PE added").click()
    wait_for_app(page)
    page.get_by_text("the layer now knows where each word stands").wait_for()

    _open_tab(page, "Comparison")
    page.get_by_text("GPT-2 (1024)").first.wait_for()
    assert not errors, errors
