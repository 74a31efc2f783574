"""The fine-tuning run shipped with the app: recorded with the default settings, it learns over many snapshots
(a curve to watch, not 100% after a few steps), and its time says how it was measured."""
import numpy as np
import pytest

from attnviz.training.finetune import FinetuneConfig, timing_note
from attnviz.training.runs import load, recorded_runs


@pytest.fixture(scope="module")
def run():
    return load(recorded_runs()["finetune"])


def test_the_recorded_run_uses_the_default_settings(run):
    from dataclasses import asdict

    assert run.meta["finetune"] == asdict(FinetuneConfig())
    assert run.completed and run.meta["steps_done"] == FinetuneConfig().steps


def test_the_recorded_accuracy_rises_over_the_run(run):
    steps, acc = run.frame_steps, run.frame_accuracy
    learned = int(steps[np.argmax(acc >= 0.99)])
    assert acc[-1] >= 0.99
    assert learned >= steps[-1] / 3, f"accuracy reaches 99% at step {learned} of {steps[-1]}"
    rising = acc[steps < learned]
    assert len(np.unique(np.round(rising, 3))) >= 8  # many distinct points on the way up
    assert rising[0] < 0.6 and np.all(np.diff(np.maximum.accumulate(rising)) >= 0)


def test_the_recorded_time_comes_with_its_conditions(run):
    m = run.meta
    assert m["cpu_seconds"] > 0 and m["seconds"] >= m["cpu_seconds"] * 0.5
    assert m["cpu_count"] >= 1 and m["load_average"] >= 0
    note = timing_note(m)
    assert f"load average {m['load_average']:.1f} on {m['cpu_count']} cores" in note


def test_timing_note_says_when_the_machine_was_busy():
    busy = timing_note({"seconds": 2984.7, "cpu_seconds": 257.3, "load_average": 17.66, "cpu_count": 2})
    assert busy == ("Took 50 min of wall-clock time while the machine was busy (load average 17.7 on 2 cores; the "
                    "training thread had 4 min 17 s of processor time): a live run on a quieter machine takes less.")
    quiet = timing_note({"seconds": 48.2, "cpu_seconds": 45.1, "load_average": 0.8, "cpu_count": 2})
    assert quiet == ("Took 48 s of wall-clock time (load average 0.8 on 2 cores; the training thread had 45 s of "
                     "processor time).")
    assert timing_note({"seconds": 413.0}) is None  # a run recorded without its conditions claims nothing
