"""Chromium against `streamlit run`: the query · key page renders and follows the head and query."""
import numpy as np
import pytest

from tests.browser.helpers import choose, open_path, wait_plot

pytestmark = pytest.mark.browser

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def result():
    from attnviz.extract import extract
    from attnviz.models import load_model

    return extract(load_model("minilm"), TEXT)


def _softmax_row(page) -> np.ndarray:
    i = wait_plot(page, ytitle="attention weight")
    return np.asarray(page.evaluate("(i) => document.querySelectorAll('.js-plotly-plot')[i]._fullData[0].y", i),
                      dtype=float)


def _wait_row(page, want, timeout=60.0):
    import time

    deadline = time.time() + timeout
    while True:
        got = _softmax_row(page)
        if got.shape == want.shape and np.allclose(got, want, atol=1e-4):
            return got
        if time.time() > deadline:
            np.testing.assert_allclose(got, want, atol=1e-4)
        time.sleep(0.3)


def test_url_head_then_widgets_change_the_numbers(page, app_server, result):
    open_path(page, app_server, "/query_key?qk_layer=3&qk_head=9")
    _wait_row(page, result.attention[3, 9, 10])  # default query: the last word "tired"
    assert page.locator(".js-plotly-plot").count() >= 6
    choose(page, "Head", "2")
    _wait_row(page, result.attention[3, 2, 10])
    choose(page, "Query token (the row)", "7: because")
    _wait_row(page, result.attention[3, 2, 7])
    # a new text with as many tokens: the boxes keep their positions and show the new text's tokens
    from tests.browser.helpers import box_value, set_sidebar_text

    set_sidebar_text(page, "A dog ran on the rug since it was very sleepy.")
    page.get_by_text("query 'since' (position 7)").first.wait_for(timeout=60_000)
    assert box_value(page, "Query token (the row)") == "7: since"
    from attnviz.extract import encode
    from attnviz.models import load_model

    tokens = encode(load_model("minilm"), "A dog ran on the rug since it was very sleepy.").tokens
    position, token = box_value(page, "Key token").split(": ", 1)
    assert token == tokens[int(position)], (position, token, tokens)
