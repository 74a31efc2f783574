"""Chromium: the user's lab matrices survive a bad temperature; messages are visible
without opening a collapsed section."""
import time

import numpy as np
import pytest

from tests.browser.helpers import plot_z, wait_plot
from tests.conftest import CONTEXT, wait_for_app

pytestmark = pytest.mark.browser

K = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], float)  # the worked example's keys


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _type_t(page, value: str):
    box = page.get_by_role("textbox", name="…or type T exactly")
    box.scroll_into_view_if_needed()
    box.fill(value)
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)


def _visible_warnings(page) -> list[str]:
    alerts = page.locator('[data-testid="stAlert"]')
    return [alerts.nth(i).inner_text() for i in range(alerts.count()) if alerts.nth(i).is_visible()]


def _type_q(page, app_server, text: str) -> None:
    """Open the temperature lab, open its editor and type `text` as Q (a text area commits on blur)."""
    page.goto(app_server.url + "/lab_temperature")
    wait_for_app(page)
    page.get_by_text("Attention returns (weighted lifespan)").wait_for()
    page.get_by_text("Edit Q, K, V").first.click()
    q_box = page.get_by_role("textbox", name="Q", exact=True)
    q_box.wait_for()
    q_box.fill(text)
    q_box.press("Tab")
    time.sleep(0.5)
    wait_for_app(page)


def test_temperature_keeps_the_users_matrices_through_bad_t(page, app_server):
    mine = "2 0 1 0\n0 1 0 3\n1 1 1 0"
    _type_q(page, app_server, mine)

    for bad, fragment in (("-1", "greater than 0"), ("1e9", "1000"), ("abc", "not a number")):
        _type_t(page, bad)
        shown = _visible_warnings(page)
        assert any(fragment in w for w in shown), (bad, shown)
        assert page.locator('[data-testid="stException"]').count() == 0

    _type_t(page, "2")
    z = np.asarray(plot_z(page, wait_plot(page, title="Weights at T = 2")), dtype=float)
    q = np.array([[2, 0, 1, 0], [0, 1, 0, 3], [1, 1, 1, 0]], float)
    np.testing.assert_allclose(z, _softmax_rows(q @ K.T / (2 * 2)), atol=1e-4)  # still the user's Q
    if not page.get_by_role("textbox", name="Q", exact=True).is_visible():
        page.get_by_text("Edit Q, K, V").first.click()
    assert page.get_by_role("textbox", name="Q", exact=True).input_value() == mine


def test_temperature_bad_matrix_warning_is_visible_with_the_editor_closed(page, app_server):
    _type_q(page, app_server, "1 0 1\n0 1")
    page.get_by_text("Edit Q, K, V").first.click()  # close it again
    time.sleep(0.5)
    assert any("ragged" in w for w in _visible_warnings(page))


def test_grouped_bar_labels_do_not_touch_on_a_narrow_screen(browser, app_server):
    """Quiz page, 'Forgetting the causal mask': t6 moves by the same amount with and without the
    mask; at 480 px the two value labels used to touch and read '3.3673.367'."""
    context = browser.new_context(viewport={"width": 480, "height": 900}, **CONTEXT)
    page = context.new_page()
    try:
        page.goto(app_server.url + "/lab_quiz")
        wait_for_app(page)
        page.get_by_text("Forgetting the causal mask").click()
        time.sleep(0.5)
        wait_for_app(page)
        i = wait_plot(page, title="Change only t6")
        boxes = page.evaluate("""(i) => [...document.querySelectorAll('.js-plotly-plot')[i].querySelectorAll('.bartext')]
            .map(t => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right, r.top, r.bottom]; })""", i)
        assert len(boxes) == 12
        for a in range(len(boxes)):
            for b in range(a + 1, len(boxes)):
                _, l1, r1, t1, b1 = boxes[a]
                _, l2, r2, t2, b2 = boxes[b]
                if t1 < b2 and t2 < b1:  # on the same height: at least 2 px apart
                    assert r1 + 2 <= l2 or r2 + 2 <= l1, (boxes[a], boxes[b])
    finally:
        context.close()


def _commit(page, box, value: str, key: str = "Enter") -> None:
    box.scroll_into_view_if_needed()
    box.fill(value)
    box.press(key)
    time.sleep(0.5)
    wait_for_app(page)


def test_variants_sentences_come_back_with_the_encoders_states(page, app_server):
    """The lab's part stops at an empty encoder matrix and leaves the sentence boxes undrawn; when the matrix is
    typed back, its own rerun gives those boxes their values again, so the boxes show what the figures use."""
    page.goto(app_server.url + "/lab_variants")
    wait_for_app(page)
    source = page.get_by_role("textbox", name="Source sentence (encoder)")
    _commit(page, source, "der Hund schläft")
    states = page.get_by_role("textbox", name="Encoder states h (one source position per row)")
    original = states.input_value()
    _commit(page, states, "", "Control+Enter")
    assert any("empty" in w.lower() for w in _visible_warnings(page)), _visible_warnings(page)
    assert source.count() == 0  # the sentences' section is not drawn meanwhile
    _commit(page, states, original, "Control+Enter")
    assert source.input_value() == "der Hund schläft"
    assert page.get_by_role("textbox", name="Target sentence (decoder)").input_value() == "the cat is sitting"
    _commit(page, page.get_by_role("textbox", name="Target sentence (decoder)"), "the dog sleeps")
    assert not any("space-separated tokens" in w for w in _visible_warnings(page)), _visible_warnings(page)
    cross = wait_plot(page, title="Cross (target → source)")
    ticks = page.evaluate("(i) => Array.from(document.querySelectorAll('.js-plotly-plot')[i]._fullLayout.xaxis.ticktext"
                          " || [])", cross)
    assert [t.split(":")[-1].strip() for t in ticks] == ["der", "Hund", "schläft"], ticks
    assert page.locator('[data-testid="stException"]').count() == 0


def test_temperature_the_control_touched_last_sets_t(page, app_server):
    """A typed T puts the slider on its nearest notch; moving the slider then clears the typed T, and the figures
    follow the slider."""
    page.goto(app_server.url + "/lab_temperature")
    wait_for_app(page)
    slider = page.locator('.st-key-temp_T input[type="range"]')
    _type_t(page, "0.37")
    page.get_by_text("The worked example at T = 0.37").first.wait_for()
    assert slider.get_attribute("aria-valuetext") == "0.4"  # the nearest notch: 0.32 < 0.37 < 0.4
    slider.focus()
    slider.press("ArrowRight")
    time.sleep(0.5)
    wait_for_app(page)
    assert slider.get_attribute("aria-valuetext") == "0.5"
    assert page.get_by_role("textbox", name="…or type T exactly").input_value() == ""
    page.get_by_text("The worked example at T = 0.5").first.wait_for()
    from attnviz.lab import worked_example as ex

    z = np.asarray(plot_z(page, wait_plot(page, title="Weights at T = 0.5")), dtype=float)
    np.testing.assert_allclose(z, _softmax_rows(ex.Q @ ex.K.T / (2 * 0.5)), atol=1e-4)  # √d_k = 2, T = 0.5
