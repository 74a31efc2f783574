"""The one progress-and-cancel protocol: attnviz.ui.jobs.Job (training, the benchmark, every background job), the time
left from a task's own pace, the cancel flag and Cancelled, and the timings record that the hints quote."""
import threading
import time
from types import SimpleNamespace

import pytest

from attnviz import timings
from attnviz.complexity import measure as cm
from attnviz.errors import BadInput
from attnviz.progress import Cancelled, check, is_cancelled, status_text, time_left, time_left_text
from attnviz.training.jobs import LiveTraining
from attnviz.ui.jobs import Job
from attnviz.units import human_seconds


def test_job_reports_progress_and_returns_its_result():
    def work(report, cancel):
        for i in range(3):
            report(i, 3, f"size {i}")
        return "finished"

    job = Job(work, "measuring")
    assert job.wait(10) and job.done and job.result == "finished" and job.error is None
    assert (job.step, job.total, job.message) == (2, 3, "size 2")
    assert job.fraction == 2 / 3


def test_cancel_stops_between_steps_and_keeps_what_was_done():
    gate, done = threading.Event(), []

    def work(report, cancel):
        for i in range(100):
            if cancel.is_set():
                break
            done.append(i)
            gate.wait(5)  # the first step waits until the test has pressed Cancel
        return list(done)

    job = Job(work, "measuring")
    job.cancel()
    gate.set()
    assert job.wait(10) and job.cancelled and job.result == [0]


def test_errors_become_sentences():
    def bad_input(report, cancel):
        raise BadInput("Pick at least one sequence length to measure.")

    def bug(report, cancel):
        return 1 / 0

    a, b = Job(bad_input, "measuring"), Job(bug, "training")
    assert a.wait(10) and a.error == "Pick at least one sequence length to measure." and a.result is None
    assert b.wait(10) and b.error == "Training failed: ZeroDivisionError: division by zero"


def test_the_benchmark_runs_as_a_job_and_fills_its_results_live():
    cfg = cm.BenchConfig(sizes=(64, 128), implementations=("linear",), repeats=1, measure_memory=False)
    results = []
    job = Job(lambda report, cancel: cm.run(cfg, report, cancel, into=results), "measuring")
    assert job.wait(60) and job.error is None
    assert job.result is results and [m.n for m in results] == [64, 128]
    assert (job.step, job.total, job.message) == (2, 2, "done")


def test_training_progress_reaches_the_job():
    live, seen = LiveTraining(), []
    cb = live.callback(lambda step, total, msg: seen.append((step, total, msg)))
    cb(SimpleNamespace(step=5, total=10, losses=[2.0, 1.5], snapshot={"self": 1}, accuracy=None))
    cb(SimpleNamespace(step=6, total=10, losses=[2.0, 1.5, 1.2], snapshot=None, accuracy=0.5))
    assert seen == [(5, 10, "step 5 of 10"), (6, 10, "step 6 of 10")]
    assert live.losses == [2.0, 1.5, 1.2] and live.snapshot == {"self": 1} and live.snapshot_step == 5
    assert live.accuracy == 0.5


# ------------------------------------------------------------------ one progress-and-cancel protocol, time left
@pytest.fixture
def cache(tmp_path, monkeypatch):
    """attnviz's cache folder in a temporary directory (the timings record lives there)."""
    monkeypatch.setenv("ATTNVIZ_CACHE_DIR", str(tmp_path / "attnviz"))
    return tmp_path / "attnviz"


def test_time_left_follows_the_measured_pace():
    assert time_left(10.0, 0.25) == pytest.approx(30.0)  # a quarter in 10 s: three quarters take 30 s more
    assert time_left(130.0, 0.5) == pytest.approx(130.0)
    assert time_left(3.0, 0.9) == pytest.approx(1 / 3)
    assert time_left(0.0, 0.0) is None and time_left(5.0, 0.0) is None  # no step done: no pace yet
    assert time_left(5.0, 1.0) is None  # done
    assert time_left(10.0, 0.25, since=4.0) == pytest.approx(26.0)  # counts down between reports
    assert time_left(10.0, 0.25, since=40.0) == pytest.approx(150.0)  # a slower step: the pace up to now, 50 s for 1/4


def test_time_left_in_words():
    assert time_left_text(10.0, 0.25) == "about 30 s left"
    assert time_left_text(130.0, 0.5) == "about 2 min 10 s left"
    assert time_left_text(1.0, 0.01) == "about 1 min 39 s left"
    assert time_left_text(4.0, 0.0) == ""  # shown only after a first step
    assert [human_seconds(x) for x in (0.2, 32.6, 60, 458, 1250, 7500)] == \
        ["under 1 s", "33 s", "1 min", "7 min 38 s", "21 min", "2 h 5 min"]


def test_one_progress_line_for_every_task():
    assert status_text("layer 3 of 30 recorded", 12.0, 0.1) == "layer 3 of 30 recorded · 12 s · about 1 min 48 s left"
    assert status_text("starting…", 0.3, 0.0) == "starting… · under 1 s"
    assert status_text("weights read", 12.0, 0.1, 3.0) == "weights read · 15 s · about 1 min 45 s left"
    assert status_text("layer 3", 12.0, 0.1, cancelling=True) == "layer 3 · 12 s · cancelling…"
    assert status_text("layer 3", 12.0, 0.1, waiting=True) == "layer 3 · waiting for another job to finish"


def test_a_job_shows_the_time_left_after_its_first_step():
    gate, seen = threading.Event(), threading.Event()

    def work(report, cancel):
        report(0, 4, "first batch")
        seen.set()
        gate.wait(10)
        report(1, 4, "second batch")
        seen.clear()
        gate.wait(10)
        return "done"

    job = Job(work, "attributions")
    assert seen.wait(10)
    assert "left" not in job.status() and job.status().startswith("first batch · ")
    job.report(1, 4, "second batch")  # as the work would after its first step
    job.started -= 12.0  # 12 s have passed
    assert job.status() == "second batch · 12 s · about 36 s left"
    gate.set()
    assert job.wait(10) and job.result == "done"
    assert "left" not in job.status()  # finished: no time left


def test_cancel_flags_and_the_one_cancelled_error():
    event = threading.Event()
    assert not is_cancelled(None) and not is_cancelled(event) and not is_cancelled(lambda: False)
    event.set()
    assert is_cancelled(event) and is_cancelled(lambda: True)
    with pytest.raises(Cancelled) as e:
        check(event, "The recording")
    assert str(e.value) == ("The recording was cancelled before it finished (nothing was kept); start it again to "
                            "complete it.")
    check(None)  # no flag: never stops

    def work(report, cancel):
        for i in range(100):
            check(cancel, "The sink experiment")
            report(i + 1, 100)
            time.sleep(0.01)

    job = Job(work, "sink experiment")
    job.cancel()
    assert job.wait(10) and job.error.startswith("The sink experiment was cancelled")


def test_the_cancel_variants_are_the_one_protocol():
    from attnviz.attribution.gradients import Cancelled as IGCancelled
    from attnviz.training.trainer import _is_cancelled

    assert IGCancelled is Cancelled and _is_cancelled is is_cancelled
    stop = threading.Event()
    stop.set()
    cfg = cm.BenchConfig(sizes=(64, 128), implementations=("linear",), repeats=1, measure_memory=False)
    assert cm.run(cfg, cancel=stop) == [] and cm.run(cfg, cancel=lambda: True) == []


def test_a_job_that_completes_keeps_its_duration_a_cancelled_one_does_not(cache):
    def work(report, cancel):
        report(1, 2, "half")
        time.sleep(0.05)
        report(2, 2, "done")
        return 1

    job = Job(work, "attributions", timing=("minilm", timings.TRUST, "11 tokens, 32 steps"))
    assert job.wait(10) and job.error is None
    t = timings.last("minilm", timings.TRUST)
    assert t is not None and 0.05 <= t.seconds < 10 and t.detail == "11 tokens, 32 steps"

    def cancelled(report, cancel):
        report(1, 2)
        cancel.wait(10)
        check(cancel)

    job = Job(cancelled, "sink experiment", timing=("smollm2", timings.SINKS, "512 tokens"))
    job.cancel()
    assert job.wait(10) and job.error and timings.last("smollm2", timings.SINKS) is None

    cached = Job(lambda report, cancel: 2, "long recording", timing=("smollm2", timings.RECORDING, "4,096 tokens"))
    assert cached.wait(10) and timings.last("smollm2", timings.RECORDING) is None  # no step: read from a cache


def test_hints_say_what_was_measured_here(cache, monkeypatch):
    monkeypatch.setattr("os.getloadavg", lambda: (4.12, 3.0, 2.0))
    assert timings.hint("smollm2", timings.TRUST) == "not timed on this machine yet"
    timings.record("smollm2", timings.TRUST, 130.4, "11 tokens, 32 steps, randomisation check on")
    timings.record("smollm2", timings.TRUST, 129.6, "11 tokens, 32 steps, randomisation check on")  # the last counts
    cores = timings.last("smollm2", timings.TRUST).cores
    assert timings.hint("smollm2", timings.TRUST) == (
        f"last time here: 2 min 10 s (11 tokens, 32 steps, randomisation check on; machine load 4.1 on {cores} "
        f"core{'s' if cores != 1 else ''})")
    assert timings.hint("smollm2", timings.TRUST, short=True) == "last time here: 2 min 10 s"
    assert timings.hint("minilm", timings.TRUST) == "not timed on this machine yet"  # per model
    assert (cache / timings.FILE).is_file()
    (cache / timings.FILE).write_text("{not json")  # a damaged record is started again, never an error
    assert timings.last("smollm2", timings.TRUST) is None
    timings.record("smollm2", timings.TRUST, 3.0)
    assert timings.hint("smollm2", timings.TRUST, short=True) == "last time here: 3 s"


def test_the_model_switch_states_the_measured_load(cache, monkeypatch):
    from attnviz.ui.jobs import load_hint

    monkeypatch.setattr("os.getloadavg", lambda: (3.5, 3.0, 2.0))
    assert load_hint("smollm2", short=True) == "load not timed here yet"
    assert load_hint("smollm2") == ("first load: its GGUF file is converted once and kept for faster loads; "
                                    "not timed on this machine yet")
    timings.record("smollm2", timings.LOAD_GGUF, 32.5)
    assert load_hint("smollm2", short=True) == "last load here: 32 s"
    assert "the last such load here took 32 s (machine load 3.5 on" in load_hint("smollm2")
    assert load_hint("minilm", short=True) == "load not timed here yet"


def test_no_hint_promises_a_duration_that_was_not_measured():
    """Durations beside slow buttons come from the timings record: no fixed 'about 20 s' in the app's words."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [*(root / "attnviz" / "ui").rglob("*.py"), *(root / "app_pages").glob("*.py"), root / "app.py"]
    said = re.compile(r"about \d[\d,.]* ?(s|sec|seconds|min|minutes)\b")
    found = [f"{p.name}: {m.group(0)}" for p in files for m in said.finditer(p.read_text(encoding="utf-8"))]
    assert len(files) > 30 and found == []


def test_every_progress_bar_is_drawn_by_the_jobs_module():
    """Pages and UI modules draw task progress through attnviz.ui.jobs (bar, Bar, load_model), never their own
    st.progress or a loading spinner; the quiz's score bar is a score, not a task."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    files = [p for p in [*(root / "attnviz" / "ui").rglob("*.py"), *(root / "app_pages").glob("*.py"), root / "app.py"]
             if p.name != "jobs.py"]
    own = re.compile(r"\.progress\(|spinner\(f?\"Loading")
    found = sorted(f"{p.relative_to(root)}:{i}" for p in files
                   for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if own.search(line))
    assert [f.split(":")[0] for f in found] == ["app_pages/lab_quiz.py"], found  # its score bar, once
