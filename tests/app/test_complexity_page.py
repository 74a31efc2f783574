"""The complexity page in Streamlit's AppTest: numbers shown, bad input, presets, measurement."""
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

PAGE = "app_pages/complexity.py"


@pytest.fixture
def at():
    app = AppTest.from_file("../../app.py", default_timeout=180)
    app.run()
    app.switch_page(PAGE)
    app.run()
    assert not app.exception
    return app


def open_tab(at, tab: str):
    """Only the open tab runs: open `tab` as a click on it does."""
    at.session_state["cx_tab"] = tab
    at.run()
    assert not at.exception
    return at


def metrics(at):
    return {m.label: m.value for m in at.metric}


def test_bert_base_numbers(at):
    m = metrics(at)
    assert m["One head's matrix"] == "512 KiB"  # 512 x 512 x 2 bytes = 524,288 = 512 x 1024
    assert m["Scores per layer"] == "6 MiB"  # 12 heads x 512 KiB
    assert m["Attention FLOPs (forward)"] == "9.66 GFLOP"
    assert m["KV cache at n"] == "18 MiB"  # 2 x 12 x 12 x 64 x 2 B x 512 tokens = 18 x 2^20
    assert m["Attention passes FFN at"] == "n ≈ 3,072"
    assert not at.warning


def test_curves_are_log_log_with_hover(at):
    assert not at.get("plotly_chart")  # the first tab has none, and the others do not run
    open_tab(at, "Curves against n")
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["xaxis"]["type"] == "log" and spec["layout"]["yaxis"]["type"] == "log"
    names = [t["name"] for t in spec["data"]]
    assert names == ["Multi-head", "FlashAttention", "Linear attention", "Sliding window", "Sparse (strided)"]
    assert "%{customdata[1]}" in spec["data"][0]["hovertemplate"]
    at.radio(key="cx_metric").set_value("attention_matrix_bytes").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["title"]["text"] == "Scores held at once (one layer)"


@pytest.mark.parametrize("key, value, fragment", [
    ("cx_n", "3.5", "whole number of tokens"),
    ("cx_n", "0", "at least 1"),
    ("cx_n", "5e9", "beyond what this calculator handles"),
    ("cx_n", "lots", "such as 512, 100k or 1M"),
    ("cx_h", 7, "not divisible by 7 heads"),
    ("cx_kv", 5, "cannot be split evenly"),
    ("cx_batch", 0, "Batch size must be at least 1"),
    ("cx_d", -768, "d_model must be at least 1"),
])
def test_bad_input_shows_a_plain_message(at, key, value, fragment):
    widget = at.text_input(key=key) if key == "cx_n" else at.number_input(key=key)
    widget.set_value(value).run()
    assert not at.exception
    assert any(fragment in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.metric


def test_million_tokens(at):
    at.text_input(key="cx_n").set_value("1M").run()
    m = metrics(at)
    assert m["One head's matrix"] == "1.82 TiB"  # 1e12 scores x 2 bytes = 2e12 / 2^40
    assert not at.warning


def test_presets_fill_the_inputs(at):
    at.selectbox(key="cx_preset").set_value("LLaMA-7B-like").run()
    assert at.text_input(key="cx_n").value == "2048"
    assert at.number_input(key="cx_d").value == 4096
    m = metrics(at)
    assert m["KV cache at n"] == "1 GiB"  # 0.5 MiB per token x 2048
    assert m["Attention passes FFN at"] == "n ≈ 16,512"
    at.number_input(key="cx_kv").set_value(8).run()
    assert metrics(at)["KV cache at n"] == "256 MiB"  # 8 of 32 KV heads: a quarter
    assert at.selectbox(key="cx_preset").value == "Custom"


def test_loaded_model_preset(at):
    at.selectbox(key="cx_preset").set_value("The sidebar's model (its own config)").run()
    assert not at.exception
    # the packaged all-MiniLM-L6-v2: 6 layers, 12 heads, hidden 384, feed-forward 1536
    assert at.number_input(key="cx_d").value == 384
    assert at.number_input(key="cx_layers").value == 6
    assert at.number_input(key="cx_h").value == 12
    assert at.number_input(key="cx_dff").value == 1536
    assert metrics(at)["Attention passes FFN at"] == "n ≈ 1,536"


def _wait_for_job(at, timeout=120):
    """The benchmark runs in a background thread (attnviz.ui.jobs); AppTest has no timer to poll
    it, so wait for the thread, then rerun as the page's poll would."""
    job = at.session_state["cx_bench"][1]
    assert job.wait(timeout), "the benchmark did not finish"
    at.run()
    assert not at.exception


def test_measurement_runs_with_progress(at):
    open_tab(at, "Measured here")
    at.multiselect(key="cx_bench_impls").set_value(["naive", "sdpa"]).run()
    at.select_slider(key="cx_bench_max").set_value(512).run()
    at.button(key="cx_bench_start").click().run()
    assert not at.exception
    _wait_for_job(at)
    progress = at.get("progress")
    assert progress and re.fullmatch(r"Done: 4 of 4 sizes · (\d+ s|under 1 s)", progress[0].proto.text)  # and how long
    labels = [m.label for m in at.metric]
    assert "naive: fitted slope of time" in labels and "torch SDPA: fitted slope of time" in labels
    table = at.dataframe[-1].value
    assert list(table["n"]) == [256, 256, 512, 512]
    assert table["Time (ms)"].notna().all()


def test_measurement_skips_what_does_not_fit(at):
    open_tab(at, "Measured here")
    at.number_input(key="cx_bench_mem").set_value(0.1).run()
    at.select_slider(key="cx_bench_max").set_value(4096).run()
    before = at.dataframe[-1].value  # the prediction table, shown before running
    fits = dict(zip(zip(before["Implementation"], before["n"]), before["Fits the cap"]))
    assert fits[("Naive softmax attention", "4,096")] == "no: skipped"  # 2 x 4 x 4096^2 x 4 B
    assert fits[("Linear attention (elu+1)", "4,096")] == "yes"
