"""attnviz.ui.jobs.Job: the one background-job mechanism (training, the complexity benchmark)."""
import threading
from types import SimpleNamespace

from attnviz.complexity import measure as cm
from attnviz.errors import BadInput
from attnviz.training.jobs import LiveTraining
from attnviz.ui.jobs import Job


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
