"""AppTest for every lab page: runs clean, shows the right numbers, plain messages for bad input."""
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from tests.figures import app_figures, decode

APP = Path(__file__).resolve().parents[2] / "app.py"
LAB = ["lab_steps", "lab_scaling", "lab_temperature", "lab_masks", "lab_multihead", "lab_variants",
       "lab_kv_cache", "lab_quiz"]


def _open(page: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _z(at, i):
    """z of the first trace of the i-th plotly chart."""
    return np.asarray(decode(app_figures(at)[i]["data"][0]["z"]), dtype=float).tolist()


@pytest.mark.parametrize("page", LAB)
def test_page_runs(page):
    at = _open(page)
    assert at.title and at.title[0].value[0].isdigit()  # numbered in lecture order
    assert not at.warning
    # the quiz page demonstrates the d_model / n_heads error on purpose
    assert [e.value for e in at.error if "not divisible" not in e.value] == []


def test_steps_shows_correct_worked_example():
    at = _open("lab_steps")
    weights = _z(at, 2)
    assert [round(x, 4) for x in weights[0]] == [0.2741, 0.2741, 0.4519]
    assert [round(x, 4) for x in weights[2]] == [0.5065, 0.1863, 0.3072]
    assert [round(x, 4) for x in _z(at, 3)[0]] == [5.7112, 6.7112, 7.7112, 8.7112]
    assert any("0.2312" in i.value for i in at.info)  # the note on the seed's slip
    at.text_area(key="steps_q").set_value("1 0 1\n0 1").run()
    assert "ragged" in at.warning[0].value
    at.text_area(key="steps_q").set_value("1 0 1\n0 1 0").run()
    assert "same width" in at.warning[0].value
    at.text_area(key="steps_q").set_value("1 a 1 0").run()
    assert "'a' is not a number" in at.warning[0].value


def test_temperature_sharpens_and_rejects_zero():
    at = _open("lab_temperature")
    warm = max(_z(at, 0)[0])
    at.select_slider(key="temp_T").set_value(0.01).run()
    cold = max(_z(at, 0)[0])
    assert round(warm, 4) == 0.4519 and cold > 0.999
    at.text_input(key="temp_typed").set_value("0").run()
    assert "greater than 0" in at.warning[0].value


def test_masks_bad_lengths_and_empty_rows():
    at = _open("lab_masks")
    assert any("fully masked" in i.value for i in at.info) is False  # sequence 1 has no empty row
    at.radio(key="masks_seq").set_value(2).run()
    assert any("fully masked" in i.value for i in at.info)
    at.text_input(key="masks_lengths").set_value("5, 9").run()
    assert "longer than the padded length" in at.warning[0].value
    at.text_input(key="masks_lengths").set_value("5, x").run()
    assert "not a whole number" in at.warning[0].value


def test_multihead_divisibility_error():
    at = _open("lab_multihead")
    at.number_input(key="mh_dmodel").set_value(256).run()
    at.number_input(key="mh_heads").set_value(6).run()
    assert "not divisible" in at.error[0].value


def test_kv_cache_page_numbers_and_bad_prompt():
    at = _open("lab_kv_cache")
    assert at.metric[0].value == "45 MiB"  # SmolLM2 preset, 2048 tokens, fp16: 2x30x3x64x2048x2 = 45 x 2^20
    assert any("135 MiB" in m.value for m in at.markdown)  # counting its 9 query heads: 3x as much
    at.text_input(key="kv_prompt").set_value("hello #1").run()
    assert "remove '#'" in at.warning[0].value


def test_kv_cache_one_step_and_the_query_head_comparison_only_where_it_holds():
    at = _open("lab_kv_cache")
    at.number_input(key="kv_new").set_value(1).run()
    assert not at.exception and not at.get("slider")
    assert any(c.value == "One character is generated, so there is one step." for c in at.caption)
    assert any("**Step 1** pushes" in m.value for m in at.markdown)
    at.number_input(key="kv_new").set_value(3).run()
    assert at.slider(key="kv_step").max == 3 and at.slider(key="kv_step").value == 3
    name = at.selectbox(key="kv_preset").value
    text = lambda: " ".join(m.value for m in at.markdown)
    at.number_input(key=f"kv_kvh_{name}").set_value(2).run()  # 9 query heads over 2 KV heads
    assert "Counting the preset's 9 query heads instead of the 2 KV heads would give 135 MiB, 4.5× too much" in text()
    for key, value in ((f"kv_kvh_{name}", 12), (f"kv_kvh_{name}", 9)):  # more KV heads than query heads, or as many
        at.number_input(key=key).set_value(value).run()
        assert "query heads instead" not in text()
    at.number_input(key=f"kv_kvh_{name}").set_value(3).run()
    at.number_input(key=f"kv_layers_{name}").set_value(0).run()  # an empty cache: nothing to compare
    assert at.metric[0].value == "0 B" and "query heads instead" not in text()


def test_quiz_feedback():
    at = _open("lab_quiz")
    at.radio(key="quiz_sqrt_dk").set_value(1).run()
    assert at.success and at.success[0].value.startswith("Right")
    at.radio(key="quiz_memory").set_value(0).run()
    assert at.error and "O(n²)" in at.error[0].value
