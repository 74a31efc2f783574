"""Background jobs of the pages (training, the complexity benchmark): a thread, its progress, Cancel, polling.

One mechanism for every long task: `start` runs `work(report, cancel)` in a daemon thread and
keeps the Job in the session; the page draws what it likes from the Job inside `watch`, a
fragment that reruns every second while the job runs and reruns the whole page once when it
ends (so the controls it disabled come back); `cancel` is the Cancel button's callback; the
work function calls `report(step, total, message)` as it goes and checks the `cancel` Event
between steps.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Callable

import streamlit as st

from attnviz.errors import AttnvizError

# One job at a time per server: two at once would halve each one's speed on 2 cores (and
# disturb the benchmark's timings). A second job waits, saying so.
_RUNNING = threading.Semaphore(1)
WAITING = "waiting for the CPU…"  # a job's message until it may start


class Job:
    """`work(report, cancel)` running in a daemon thread.

    The page reads .step, .total, .message, .fraction and .elapsed while it runs, asks it to
    stop with .cancel(), and takes .result (or .error, a plain sentence) once .done is True.
    .data holds what the page gave `start` for its own drawing (live curves, the plan).
    """

    def __init__(self, work: Callable, label: str, **data):
        self.label = label
        self.data = data
        self.step, self.total = 0, 1
        self.message = WAITING
        self.result = None
        self.error: str | None = None
        self.collected = False  # the page has seen it end (watch reran the page once)
        self.started = time.perf_counter()
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(work,), daemon=True, name=f"attnviz-{label}")
        self._thread.start()

    def report(self, step: int, total: int, message: str | None = None) -> None:
        """Progress from the work function: `step` of `total` done, what happens now."""
        self.step, self.total = int(step), max(1, int(total))
        self.message = message if message is not None else f"step {step} of {total}"

    def _main(self, work) -> None:
        try:
            with _RUNNING:
                self.started = time.perf_counter()
                self.message = "starting…"
                self.result = work(self.report, self._cancel)
        except AttnvizError as e:
            self.error = str(e)
        except Exception as e:  # a bug: keep the page alive, say what happened
            traceback.print_exc()
            self.error = f"{self.label.capitalize()} failed: {type(e).__name__}: {e}"
        finally:
            self._done.set()

    def cancel(self) -> None:
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def fraction(self) -> float:
        return min(1.0, max(0.0, self.step / max(1, self.total)))

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


def start(key: str, work: Callable, label: str, tag=None, **data) -> Job:
    """Start a job under session key `key` (for `tag`, e.g. a training slot), cancelling the
    one that ran there; stored as (tag, Job)."""
    old = current(key)
    if old is not None and not old.done:
        old.cancel()
    job = Job(work, label, **data)
    st.session_state[key] = (tag, job)
    return job


def current(key: str, tag=None) -> Job | None:
    """The job under `key` (finished or not); with a tag, only the job started for that tag."""
    held = st.session_state.get(key)
    if not held or (tag is not None and held[0] != tag):
        return None
    return held[1]


def running(key: str, tag=None) -> bool:
    job = current(key, tag)
    return job is not None and not job.done


def cancel(key: str) -> None:
    """Cancel button callback: the job stops at its next step; what it did so far is kept."""
    job = current(key)
    if job is not None and not job.done:
        job.cancel()


def watch(key: str, draw: Callable[[Job], None], on_done: Callable[[Job], None] | None = None,
          tag=None, every: float = 1.0) -> None:
    """While the job under `key` runs, draw(job) in a fragment refreshed every `every` seconds;
    when it has ended, on_done(job) once and a full rerun of the page."""
    job = current(key, tag)
    if job is None or job.collected:
        return

    @st.fragment(run_every=every)
    def _poll():
        j = current(key, tag)
        if j is None or j.collected:
            return
        if j.done:
            j.collected = True
            if on_done is not None:
                on_done(j)
            st.rerun()
        draw(j)

    _poll()


def progress(job: Job, text: str) -> None:
    st.progress(job.fraction, text=text)
