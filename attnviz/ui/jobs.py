"""Every slow task's progress on screen, one way: background jobs (a thread, Cancel, polling), bars of work done in
the page's own run, and model loads; each drawn by `bar` with the time left from the task's own pace.

The protocol is attnviz.progress: a slow function reports `progress(done, total, label)` and checks a
cancel flag between steps (raising Cancelled). Here, `start` runs `work(report, cancel)` in a daemon
thread and keeps the Job in the session (the Job is the work's Progress, its cancel flag a
threading.Event); the page draws the Job inside `watch`, a fragment that reruns every second while the
job runs and reruns the whole page once when it ends (so the controls it disabled come back); `cancel`
is the Cancel button's callback. `Bar` is the same progress line for work the page does itself, and
`load_model` loads a model under it. A job or bar given a `timing` keeps its duration in the timings
record (attnviz.timings), which the hints beside slow buttons quote.
"""
from __future__ import annotations

import threading
import time
import traceback
from typing import Callable

import streamlit as st

from attnviz import timings
from attnviz.errors import AttnvizError
from attnviz.progress import status_text
from attnviz.units import human_seconds

# One job at a time per server: two at once would halve each one's speed on 2 cores (and
# disturb the benchmark's timings). A second job waits, saying so.
_RUNNING = threading.Semaphore(1)
WAITING = "waiting for the CPU…"  # a job's message until it may start
MIN_TIMED = 1.0  # seconds: a page's own loop that ends sooner read its results from the caches (not timed)


class Job:
    """`work(report, cancel)` running in a daemon thread.

    The page reads .step, .total, .message, .fraction and .elapsed while it runs, asks it to
    stop with .cancel(), and takes .result (or .error, a plain sentence) once .done is True.
    .data holds what the page gave `start` for its own drawing (live curves, the plan).
    timing: (model, task, detail) to keep the duration of a run that completes in the timings record.
    """

    def __init__(self, work: Callable, label: str, timing: tuple[str, str, str] | None = None, **data):
        self.label = label
        self.data = data
        self.timing = timing
        self.step, self.total = 0, 1
        self.message = WAITING
        self.result = None
        self.error: str | None = None
        self.collected = False  # the page has seen it end (watch reran the page once)
        self.started = time.perf_counter()
        self.finished: float | None = None
        self.stepped: float | None = None  # perf_counter() of the last report
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(work,), daemon=True, name=f"attnviz-{label}")
        self._thread.start()

    def report(self, step: int, total: int, message: str | None = None) -> None:
        """Progress from the work function (attnviz.progress.Progress): `step` of `total` done, what happens now."""
        self.step, self.total = int(step), max(1, int(total))
        self.message = message or f"step {step} of {total}"
        self.stepped = time.perf_counter()

    def _main(self, work) -> None:
        try:
            with _RUNNING:
                self.started = time.perf_counter()
                self.message = "starting…"
                self.result = work(self.report, self._cancel)
                if self.timing is not None and self.step > 0 and not self._cancel.is_set():  # step 0: a cache hit
                    timings.record(*self.timing[:2], time.perf_counter() - self.started, self.timing[2])
        except AttnvizError as e:
            self.error = str(e)
        except Exception as e:  # a bug: keep the page alive, say what happened
            traceback.print_exc()
            self.error = f"{self.label.capitalize()} failed: {type(e).__name__}: {e}"
        finally:
            self.finished = time.perf_counter()
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
        """Seconds since the work started (waiting for the CPU not counted), up to its end once done."""
        return (self.finished or time.perf_counter()) - self.started

    @property
    def waiting(self) -> bool:
        return self.message == WAITING and not self.done

    def status(self, label: str | None = None) -> str:
        """The progress line: `label` (default: what the work reports now) · time so far · time left."""
        if self.done or self.stepped is None:
            at_step, since = self.elapsed, 0.0
        else:
            at_step, since = self.stepped - self.started, time.perf_counter() - self.stepped
        return status_text(label or self.message, at_step, 1.0 if self.done else self.fraction, since,
                           waiting=self.waiting, cancelling=self.cancelled and not self.done)

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)


def start(key: str, work: Callable, label: str, tag=None, timing: tuple[str, str, str] | None = None, **data) -> Job:
    """Start a job under session key `key` (for `tag`, e.g. a training slot), cancelling the
    one that ran there; stored as (tag, Job). timing: (model, task, detail) to record its duration."""
    old = current(key)
    if old is not None and not old.done:
        old.cancel()
    job = Job(work, label, timing=timing, **data)
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


def bar(job: Job, label: str | None = None, extra: str = "") -> None:
    """The job's progress bar: `label` (default: what the work reports now), its time so far and, from the
    second report on, the time left at its own pace; `extra` (a hint, an accuracy) after them."""
    text = job.status(label)
    st.progress(job.fraction, text=f"{text} · {extra}" if extra else text)


class Bar:
    """The same progress line for work the page's own run does (a loop over sentences, heads, slides):
    `with Bar("Scoring…") as report: ... report(i + 1, n, "Scored 3 of 9")`; the bar goes when the block ends.

    It is an attnviz.progress.Progress. timing: (model, task, detail) to record the block's duration when it
    completes and took at least MIN_TIMED seconds (a quicker one came from the caches); hint: shown after the
    time left (e.g. what the last run here took)."""

    def __init__(self, label: str, hint: str = "", timing: tuple[str, str, str] | None = None):
        self.label, self.hint, self.timing = label, hint, timing
        self.started = time.perf_counter()
        self._bar = None

    def __enter__(self) -> "Bar":
        self.started = time.perf_counter()
        self._bar = st.progress(0.0, text=self._text(self.label, 0.0))
        return self

    def _text(self, label: str, fraction: float) -> str:
        text = status_text(label, time.perf_counter() - self.started, fraction)  # drawn at each report
        return f"{text} · {self.hint}" if self.hint else text

    def __call__(self, done: int, total: int, label: str = "") -> None:
        fraction = min(1.0, max(0.0, done / max(1, total)))
        self._bar.progress(fraction, text=self._text(label or self.label, fraction))

    def __exit__(self, kind, error, tb) -> None:
        self._bar.empty()
        if kind is None and self.timing is not None and time.perf_counter() - self.started >= MIN_TIMED:
            timings.record(*self.timing[:2], time.perf_counter() - self.started, self.timing[2])


def load_hint(key: str, short: bool = False) -> str:
    """What loading `key` the way it will load next took here last time: 'last load here: 33 s' (short), or with
    its conditions; 'load not timed here yet' when it never was. A GGUF file not converted yet says that the first
    load converts it (and keeps a copy that later loads read). '' for a local folder (its loads are not timed)."""
    from pathlib import Path

    from attnviz.models.registry import load_task

    if Path(key).expanduser().exists():
        return ""
    task = load_task(key)
    t = timings.last(key, task)
    if short:
        return "load not timed here yet" if t is None else f"last load here: {human_seconds(t.seconds)}"
    cond = "" if t is None else timings.conditions(t)
    said = ("not timed on this machine yet" if t is None
            else f"the last such load here took {human_seconds(t.seconds)}" + (f" ({cond})" if cond else ""))
    if task == timings.LOAD_GGUF:
        return f"first load: its GGUF file is converted once and kept for faster loads; {said}"
    if task == timings.LOAD_COPY:
        return f"reading the copy converted from its GGUF file; {said}"
    return said


class _Load:
    """A model load in flight, shared by every run that waits for it (a rerun while it loads finds it again): when
    it started and the last progress the loader reported."""

    def __init__(self):
        self.started = self.stepped = time.perf_counter()
        self.step, self.total, self.label = 0, 1, "reading the config"

    def __call__(self, done: int, total: int, label: str = "") -> None:
        self.step, self.total, self.label = int(done), max(1, int(total)), label or self.label
        self.stepped = time.perf_counter()

    def status(self, name: str) -> tuple[float, str]:
        fraction = min(1.0, self.step / self.total)
        now = time.perf_counter()
        return fraction, status_text(f"Loading {name}: {self.label}", self.stepped - self.started, fraction,
                                     now - self.stepped)


_LOADS: dict[str, _Load] = {}  # model key -> its load in flight
_LOADS_LOCK = threading.Lock()


def load_model(key: str):
    """The LoadedModel of `key` (ui.cache.get_model), with a progress bar while it loads: its stages, the time
    left at its own pace, and what the last load here took. Raises what get_model raises."""
    from attnviz.ui.cache import get_model

    with _LOADS_LOCK:
        first = key not in _LOADS
        load = _LOADS.setdefault(key, _Load())
    out: dict = {}

    def work() -> None:
        try:
            out["model"] = get_model(key, _progress=load)  # reports only when it really loads
        except BaseException as e:  # re-raised in the page's run
            out["error"] = e
        finally:
            if first:
                with _LOADS_LOCK:
                    _LOADS.pop(key, None)

    thread = threading.Thread(target=work, daemon=True, name=f"attnviz-load-{key}")
    thread.start()
    thread.join(0.3)  # a model already loaded returns at once: no bar
    if thread.is_alive():
        from attnviz.models.registry import PACKAGED

        name = PACKAGED[key].label.split(" · ")[0] if key in PACKAGED else key
        hint = load_hint(key)
        fraction, text = load.status(name)
        line = st.progress(fraction, text=" · ".join(filter(None, (text, hint))))
        while thread.is_alive():
            thread.join(0.5)
            fraction, text = load.status(name)
            line.progress(fraction, text=" · ".join(filter(None, (text, hint))))
        line.empty()
    if "error" in out:
        raise out["error"]
    return out["model"]
