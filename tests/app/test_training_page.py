"""AppTest of the training page: recorded runs open at once, a short run trains, bad settings warn."""
import json
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from tests.figures import decode

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _open():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("app_pages/training.py")
    at.run()
    assert not at.exception, at.exception
    return at


def _spec(chart):
    return json.loads(chart.proto.spec)


def _z(chart) -> np.ndarray:
    """z of the first trace."""
    return np.asarray(decode(_spec(chart)["data"][0]["z"]), dtype=float)


def _wait_for_job(at, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        job = at.session_state["tr_job"] if "tr_job" in at.session_state else None
        if job is None:
            return
        if job[1].done:
            at.run()
        else:
            time.sleep(0.3)
    raise TimeoutError("the training job did not finish")


def test_recorded_reverse_run_shows_antidiagonal_and_scrubs():
    at = _open()
    assert at.session_state["tr_source"] == "Toy task"
    run = at.session_state["tr_runs"]["toy:reverse"]
    assert run.n_frames >= 40
    # the heatmap shows the last frame's mean cross-attention; its anti-diagonal holds most mass
    z = _z(at.get("plotly_chart")[0])
    assert z.shape == (8, 8)
    assert np.fliplr(z).diagonal().mean() > 0.9
    # scrub to the first frame: untrained attention is spread out, not anti-diagonal
    at.select_slider(key="tr_frame").set_value(0).run()
    assert not at.exception
    z0 = _z(at.get("plotly_chart")[0])
    assert np.fliplr(z0).diagonal().mean() < 0.4
    titles = [_spec(c)["layout"].get("title", {}).get("text", "") for c in at.get("plotly_chart")]
    assert any("step 0" in t for t in titles)


def test_short_training_run_from_the_page():
    at = _open()
    at.number_input(key="tr_steps").set_value(30)
    at.number_input(key="tr_every").set_value(5)
    at.button(key="tr_train").click().run()
    assert not at.exception
    _wait_for_job(at)
    at.run()
    assert not at.exception
    run = at.session_state["tr_runs"]["toy:reverse"]
    assert list(run.frame_steps) == [0, 5, 10, 15, 20, 25, 30]
    assert run.loss_values[-1] < run.loss_values[0]


def test_impossible_config_gives_plain_warning():
    at = _open()
    at.number_input(key="tr_heads").set_value(5)  # 64 is not divisible by 5
    at.button(key="tr_train").click().run()
    assert not at.exception
    assert any("cannot be split evenly" in w.value for w in at.warning)
    at.number_input(key="tr_heads").set_value(4)
    at.number_input(key="tr_layers").set_value(0)
    at.button(key="tr_train").click().run()
    assert any("at least one layer" in w.value for w in at.warning)


def test_other_sources_open():
    at = _open()
    at.segmented_control(key="tr_source").set_value("Fine-tune BERT").run()
    assert not at.exception
    assert at.session_state["tr_runs"]["finetune"].n_frames > 10
    at.segmented_control(key="tr_source").set_value("Checkpoint series").run()
    assert not at.exception
    at.button(key="tr_ck_go").click().run()
    assert any("at least one checkpoint" in w.value for w in at.warning)
    at.segmented_control(key="tr_source").set_value("Run file").run()
    assert not at.exception
    assert any("Nothing to show yet" in i.value for i in at.info)


def test_task_and_steps_come_from_the_link():
    from tests.app.apptest import open_page

    at = open_page("app_pages/training.py", query={"tr_task": "sort", "tr_steps": "120"})
    assert at.selectbox(key="tr_task").value == "sort"
    assert at.number_input(key="tr_steps").value == 120
    assert "sort" in " ".join(c.value for c in at.caption).lower()  # the sort task's expectation is shown
    assert at.query_params["tr_task"] in ("sort", ["sort"])
    bad = open_page("app_pages/training.py", query={"tr_task": "nonsense", "tr_steps": "many"})
    assert bad.selectbox(key="tr_task").value == "reverse"  # unknown values fall back to the defaults
    assert bad.number_input(key="tr_steps").value != "many" and not bad.exception


def test_the_model_and_training_settings_come_from_the_link():
    from tests.app.apptest import open_page

    query = {"tr_task": "copy", "tr_dmodel": "96", "tr_heads": "3", "tr_pos": "rope", "tr_layers": "2",
             "tr_dlayers": "1", "tr_seed": "7", "tr_every": "10", "tr_lr": "0.01"}
    at = open_page("app_pages/training.py", query=query)
    assert not at.exception, at.exception
    assert [at.number_input(key=k).value for k in ("tr_dmodel", "tr_heads", "tr_layers", "tr_dlayers", "tr_seed",
                                                   "tr_every")] == [96, 3, 2, 1, 7, 10]
    assert at.selectbox(key="tr_pos").value == "rope" and at.select_slider(key="tr_lr").value == 0.01
    assert all(at.query_params[k] in (v, [v]) for k, v in query.items())
    bad = open_page("app_pages/training.py", query={"tr_pos": "spiral", "tr_lr": "0.5"})
    assert not bad.exception, bad.exception  # values the boxes do not offer fall back to the task's defaults
    assert bad.selectbox(key="tr_pos").value != "spiral" and bad.select_slider(key="tr_lr").value == 0.003


def test_a_cancelled_run_says_how_many_of_its_steps_it_did():
    import threading

    from attnviz.training.trainer import TrainConfig, train
    from tests.app.apptest import open_page

    stop = threading.Event()
    run = train(TrainConfig(task="copy", steps=100, snapshot_every=5), callback=lambda p: p.step == 13 and stop.set(),
                cancel=stop)
    at = open_page("app_pages/training.py", tr_task="copy", tr_runs={"toy:copy": run})
    finished = next(m for m in at.metric if m.label == "Finished")
    assert finished.value == "cancelled" and finished.delta == "at step 13 of 100"
