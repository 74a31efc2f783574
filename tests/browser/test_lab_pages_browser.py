"""Chromium: the main interaction of each lab page changes its figures as the maths says.
Each test leaves a screenshot in test-artifacts/ (the `page` fixture saves one named after the test)."""
import time

import numpy as np
import pytest

from tests.browser.helpers import plot_z, wait_plot
from tests.conftest import ARTIFACTS, wait_for_app

pytestmark = pytest.mark.browser

Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], float)  # the worked example of page 1
K = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], float)


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _open(page, url: str, ready_text: str):
    """Open a lab page and wait until it has drawn down to `ready_text`."""
    page.goto(url)
    wait_for_app(page)
    page.get_by_text(ready_text).first.wait_for()
    wait_for_app(page)


def _z(page, title: str) -> np.ndarray:
    return np.asarray(plot_z(page, wait_plot(page, title=title)), dtype=float)


def _wait_changed(page, title: str, before: np.ndarray, timeout: float = 30.0) -> np.ndarray:
    """The z of the figure titled `title` once it differs from `before` (shape or values)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        wait_for_app(page, settle=0.5)
        z = _z(page, title)
        if z.shape != before.shape or not np.allclose(z, before, equal_nan=True):
            return z
        time.sleep(0.3)
    raise AssertionError(f"figure {title!r} did not change")


def _press(page, slider_label: str, key: str, times: int):
    """Move the slider labelled `slider_label` by `times` notches with the keyboard."""
    thumb = page.get_by_role("slider", name=slider_label)
    thumb.scroll_into_view_if_needed()
    thumb.focus()
    for _ in range(times):
        page.keyboard.press(key)
    time.sleep(0.5)
    wait_for_app(page)


def _show(page, index: int):
    """Scroll figure `index` to the middle of the window, for the screenshot taken at teardown."""
    page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i].scrollIntoView({block: 'center'})", index)
    time.sleep(0.3)


def _set_number(page, label: str, value: int):
    box = page.get_by_label(label, exact=True)
    box.scroll_into_view_if_needed()
    box.fill(str(value))
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)


def test_steps_turning_scaling_off_sharpens_the_weights(page, app_server):
    _open(page, app_server.url + "/lab_steps", "Check a row by hand")
    heatmaps = page.locator(".js-plotly-plot")
    assert heatmaps.count() == 4  # scores, scaled, weights, output
    before = np.asarray(plot_z(page, 2), dtype=float)
    np.testing.assert_allclose(before, _softmax_rows(Q @ K.T / 2), atol=1e-4)  # ÷ √4
    page.get_by_text("Divide by √d_k").click()
    time.sleep(0.5)
    wait_for_app(page)
    page.get_by_text("Step 2 · (scaling off)").wait_for()
    after = np.asarray(plot_z(page, 2), dtype=float)
    np.testing.assert_allclose(after, _softmax_rows(Q @ K.T), atol=1e-4)
    assert (after.max(axis=1) > before.max(axis=1)).all()  # every row sharpens
    page.wait_for_function("() => location.search.includes('steps_scale=0')")
    _show(page, 2)


def test_scaling_larger_dk_widens_the_unscaled_scores(page, app_server):
    _open(page, app_server.url + "/lab_scaling", "As d_k grows from 1 to 1024")
    std = """(i) => { const d = document.querySelectorAll('.js-plotly-plot')[i]._fullData;
        const sd = (t) => { const x = Array.from(t.x), m = x.reduce((a, b) => a + b, 0) / x.length;
                            return Math.sqrt(x.reduce((a, b) => a + (b - m) ** 2, 0) / x.length); };
        return [sd(d[0]), sd(d[1])]; }"""
    i = wait_plot(page, ytitle="count of 4000")
    raw512, scaled512 = page.evaluate(std, i)
    _press(page, "d_k (width of queries and keys)", "ArrowLeft", 3)  # 512 -> 64
    page.get_by_text("Spread of q·k at d_k = 64").wait_for()
    raw64, scaled64 = page.evaluate(std, wait_plot(page, ytitle="count of 4000"))
    assert raw512 == pytest.approx(np.sqrt(512), rel=0.08) and raw64 == pytest.approx(8.0, rel=0.08)
    assert raw512 / raw64 == pytest.approx(np.sqrt(512 / 64), rel=0.1)  # spread grows like √d_k
    assert scaled512 == pytest.approx(1.0, rel=0.08) and scaled64 == pytest.approx(1.0, rel=0.08)
    page.wait_for_function("() => location.search.includes('scaling_dk=64')")
    _show(page, wait_plot(page, ytitle="count of 4000"))


def test_temperature_link_and_typed_t(page, app_server):
    _open(page, app_server.url + "/lab_temperature?temp_T=0.1", "Attention returns (weighted lifespan)")
    cold = _z(page, "Weights at T = 0.1")  # restored from the link
    np.testing.assert_allclose(cold, _softmax_rows(Q @ K.T / (2 * 0.1)), atol=1e-4)
    box = page.get_by_role("textbox", name="…or type T exactly")
    box.fill("5")
    box.press("Enter")
    time.sleep(0.5)
    wait_for_app(page)
    hot = _z(page, "Weights at T = 5")
    np.testing.assert_allclose(hot, _softmax_rows(Q @ K.T / (2 * 5)), atol=1e-4)
    assert (np.abs(hot - 1 / 3).max(axis=1) < np.abs(cold - 1 / 3).max(axis=1)).all()  # flatter: near uniform
    assert hot.max() < 0.37
    _show(page, wait_plot(page, title="Weights at T = 5"))


def test_masks_padding_only_opens_the_upper_triangle(page, app_server):
    _open(page, app_server.url + "/lab_masks", "The mistake: forgetting the causal mask")
    title = "Weights (rows sum to 1 or 0)"
    causal = _z(page, title)
    assert causal.shape == (5, 5)
    assert np.allclose(np.triu(np.nan_to_num(causal), 1), 0)  # causal + padding: nothing above the diagonal
    page.locator('[data-testid="stRadio"]').filter(has_text="Mask").get_by_text("padding", exact=True).click()
    padding = _wait_changed(page, title, causal)
    upper = padding[np.triu_indices(5, 1)]
    assert (upper > 0).all()  # sequence 1 has 5 real tokens: with only padding masked, all keys are visible
    np.testing.assert_allclose(padding.sum(axis=1), 1.0, atol=2e-3)
    page.wait_for_function("() => location.search.includes('masks_kind=padding')")


def test_multihead_heads_split_and_divisibility_message(page, app_server):
    _open(page, app_server.url + "/lab_multihead", "3 · Concatenate the heads")
    split = """() => { const el = [...document.querySelectorAll('.js-plotly-plot')].find(
        e => e._fullData && e._fullData[0].type === 'bar' && e._fullData[0].orientation === 'h');
        return el._fullData.map(t => t.x[0]); }"""
    assert page.evaluate(split) == [4, 4, 4, 4]  # d_model 16 / 4 heads
    _set_number(page, "heads h", 8)
    wait_plot(page, title="head 8 (KV head 8)")
    assert page.evaluate(split) == [2] * 8  # 16 / 8
    _set_number(page, "d_model", 18)
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="not divisible")
    alert.first.wait_for()
    assert page.locator('[data-testid="stException"]').count() == 0  # a sentence, not a traceback
    assert "18" in alert.first.inner_text()


def test_variants_new_seed_changes_learned_scores_only(page, app_server):
    _open(page, app_server.url + "/lab_variants", "Self-, cross- and causal attention")
    bahdanau, dot = _z(page, "Bahdanau"), _z(page, "Luong dot")
    _set_number(page, "seed", 5)
    bahdanau5 = _wait_changed(page, "Bahdanau", bahdanau)
    assert np.abs(bahdanau5 - bahdanau).max() > 1e-3
    np.testing.assert_allclose(bahdanau5.sum(axis=1), 1.0, atol=2e-3)  # still a distribution over the source
    np.testing.assert_allclose(_z(page, "Luong dot"), dot, atol=1e-9)  # the dot score has no parameters
    page.wait_for_function("() => location.search.includes('var_seed=5')")


def test_kv_cache_step_slider_grows_the_cache(page, app_server):
    _open(page, app_server.url + "/lab_kv_cache", "How big is the cache?")
    title = "the cached keys after step"
    last = _z(page, title)
    prompt = len("the cat sat on the")
    # step t pushes the newest of prompt + t - 1 tokens: the cache holds prompt + t - 1 keys after it
    assert last.shape == (4, prompt + 11)  # d_head 4 × (prompt + 11 generated tokens) at step 12
    _press(page, "Generation step", "ArrowLeft", 4)  # step 8
    step8 = _z(page, "after step 8:")
    assert step8.shape == (4, prompt + 7)
    np.testing.assert_allclose(step8, last[:, :prompt + 7], atol=1e-9)  # cached keys are reused, never recomputed
    _press(page, "Generation step", "ArrowRight", 2)  # step 10: two more columns
    assert _z(page, "after step 10:").shape == (4, prompt + 9)
    page.wait_for_function("() => location.search.includes('kv_step=10')")


def test_quiz_answers_give_feedback_and_score(page, app_server):
    _open(page, app_server.url + "/lab_quiz", "Common mistakes, live")
    page.get_by_text("To stop the softmax from saturating when d_k is large").click()
    page.locator('[data-testid="stAlert"]').filter(has_text="Right.").first.wait_for()
    page.get_by_text("1 right out of 1 answered").wait_for()
    page.get_by_text("O(n log n)").click()
    page.locator('[data-testid="stAlert"]').filter(has_text="Not quite. The answer is “O(n²)”").first.wait_for()
    page.get_by_text("1 right out of 2 answered").wait_for()
    page.screenshot(path=str(ARTIFACTS / "lab-quiz-feedback.png"))
