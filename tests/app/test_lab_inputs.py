"""AppTest of the lab pages' edge cases: typed temperatures, the KV cache's steps, the quiz."""
import json
import re

import numpy as np
import pytest

from tests.app.apptest import open_page
from tests.figures import app_figures, decode


def _z(at, i):
    """z of the first trace of the i-th plotly chart."""
    return np.asarray(decode(app_figures(at)[i]["data"][0]["z"]), dtype=float)


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


Q = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], float)  # the worked example
K = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0]], float)


# ------------------------------------------------------------------------------ temperature
@pytest.mark.parametrize("typed, used", [("1e9", 1000.0), ("inf", 1000.0), ("1e-300", 0.001)])
def test_temperature_out_of_range_is_clamped_with_a_visible_warning(typed, used):
    at = open_page("app_pages/lab_temperature.py")
    at.text_input(key="temp_typed").set_value(typed).run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any(f"T = {typed}" in w and f"{used:g}" in w for w in warnings), warnings
    assert len(at.get("plotly_chart")) == 4  # the page goes on, at the clamped T
    np.testing.assert_allclose(_z(at, 0), _softmax_rows(Q @ K.T / (2 * used)), atol=1e-4)


@pytest.mark.parametrize("typed, fragment", [("-1", "greater than 0"), ("nan", "greater than 0"),
                                             ("abc", "not a number")])
def test_temperature_refused_falls_back_to_the_slider_and_keeps_the_page(typed, fragment):
    at = open_page("app_pages/lab_temperature.py")
    at.select_slider(key="temp_T").set_value(2.0).run()
    at.text_input(key="temp_typed").set_value(typed).run()
    assert not at.exception
    assert any(fragment in w.value and "slider's T = 2" in w.value for w in at.warning)
    np.testing.assert_allclose(_z(at, 0), _softmax_rows(Q @ K.T / (2 * 2.0)), atol=1e-4)


def _output_line(at) -> str:
    return next(m.value for m in at.markdown if "Output of query 1:" in m.value)


def _vectors(line: str) -> list[np.ndarray]:
    return [np.array([float(x) for x in v.split(",")]) for v in re.findall(r"\[([^\]]+)\]", line)]


def test_temperature_output_of_query_1_is_compared_with_t_1_only_away_from_t_1():
    """At T = 1 the output of query 1 is given once; at another T beside its value at T = 1 (both computed here from
    the worked example: softmax(q.k / (2 T)) V)."""
    V = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], float)
    at = open_page("app_pages/lab_temperature.py")
    assert not at.exception
    line = _output_line(at)
    assert "(at T = 1" not in line, line
    (got,) = _vectors(line)
    np.testing.assert_allclose(got, _softmax_rows(Q @ K.T / 2)[0] @ V, atol=1e-4)
    at.select_slider(key="temp_T").set_value(2.0).run()
    line = _output_line(at)
    assert "(at T = 1: " in line, line
    at_t, at_1 = _vectors(line)
    np.testing.assert_allclose(at_t, _softmax_rows(Q @ K.T / 4)[0] @ V, atol=1e-4)
    np.testing.assert_allclose(at_1, _softmax_rows(Q @ K.T / 2)[0] @ V, atol=1e-4)
    assert np.abs(at_t - at_1).max() > 0.1


def test_temperature_matrix_warning_is_outside_the_collapsed_editor():
    at = open_page("app_pages/lab_temperature.py")
    at.text_area(key="temp_q").set_value("1 0 1\n0 1").run()
    assert not at.exception
    inside = [w.value for w in at.expander[0].warning] if at.expander else []
    outside = [w.value for w in at.warning if w.value not in inside]
    assert any("ragged" in w for w in outside), (inside, outside)


def test_temperature_reset_restores_the_worked_example():
    at = open_page("app_pages/lab_temperature.py")
    at.text_area(key="temp_q").set_value("2 0 0 0\n0 1 0 1\n1 1 0 0").run()
    assert not np.allclose(_z(at, 0), _softmax_rows(Q @ K.T / 2), atol=1e-4)
    at.button(key="temp_reset").click().run()
    np.testing.assert_allclose(_z(at, 0), _softmax_rows(Q @ K.T / 2), atol=1e-4)


# ------------------------------------------------------------------------------ KV cache
def _kv_spec(at):
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart")
                if "cached keys" in json.loads(c.proto.spec)["layout"]["title"]["text"])


@pytest.mark.parametrize("step", [1, 2, 7])
def test_kv_cache_text_and_figure_agree(step):
    prompt = "the cat sat on the"
    at = open_page("app_pages/lab_kv_cache.py", query={"kv_step": str(step)})
    assert at.slider(key="kv_step").value == step
    text = " ".join(m.value for m in at.markdown)
    before = int(re.search(r"Cache before the step: \*\*(\d+) tokens", text).group(1))
    assert before == len(prompt) + step - 2  # step 1: the prompt's last character is the new token
    spec = _kv_spec(at)
    z = spec["data"][0]["z"]
    n_cols = len(z[0]) if isinstance(z, list) else int(str(z["shape"]).split(",")[1])
    assert n_cols == before + 1  # the cache before, plus the one new column
    ticks = spec["layout"]["xaxis"]["ticktext"]
    assert len(ticks) == before + 1 and "NEW" in ticks[-1] and not any("NEW" in t for t in ticks[:-1])
    rect = spec["layout"]["shapes"][0]  # the frame around the new column
    assert rect["x0"] < before < rect["x1"]
    assert f"**{before + 1} tokens** after it" in text


# ------------------------------------------------------------------------------ quiz
def test_quiz_shows_choices_in_the_sessions_order_and_checks_by_meaning():
    from collections import Counter

    from attnviz.lab.quiz import QUESTIONS, arrange

    at = open_page("app_pages/lab_quiz.py", quiz_seed=7)
    order = arrange(7)
    positions = Counter()
    for q in QUESTIONS:
        radio = at.radio(key=f"quiz_{q.key}")
        assert list(radio.options) == [q.choices[i] for i in order[q.key]]
        positions[radio.options.index(q.choices[q.answer])] += 1
    assert max(positions.values()) <= 4  # not mostly the second option any more
    q = QUESTIONS[0]
    at.radio(key=f"quiz_{q.key}").set_value(q.answer).run()  # the value is the choice itself
    assert at.success and at.success[0].value.startswith("Right")
    assert any("1 right out of 1 answered" in p.proto.text for p in at.get("progress"))


def test_quiz_start_again_clears_answers_and_reshuffles():
    from attnviz.lab.quiz import QUESTIONS

    at = open_page("app_pages/lab_quiz.py", quiz_seed=7)
    for q in QUESTIONS[:3]:
        at.radio(key=f"quiz_{q.key}").set_value(q.answer).run()
    assert any("3 right out of 3 answered" in p.proto.text for p in at.get("progress"))
    before = [list(at.radio(key=f"quiz_{q.key}").options) for q in QUESTIONS]
    at.button(key="quiz_reset").click().run()
    assert not at.exception
    assert all(at.radio(key=f"quiz_{q.key}").value is None for q in QUESTIONS)
    assert any("0 right out of 0 answered" in p.proto.text for p in at.get("progress"))
    assert at.session_state["quiz_seed"] != 7
    assert [list(at.radio(key=f"quiz_{q.key}").options) for q in QUESTIONS] != before
