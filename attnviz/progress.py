"""One progress-and-cancel protocol for every slow computation: report(done, total, label), a cancel check, Cancelled.

A slow function takes `progress: Progress | None` and `cancel: CancelFlag | None`. It calls
`progress(done, total, label)` after each unit of work (a layer, a batch, a chunk; `label` says what
happens now and may be left out) and `check(cancel)` between units, which raises `Cancelled` once
the cancel flag is set. The UI draws every job's progress the same way (`attnviz.ui.jobs`), with
the time left estimated from the job's own pace (`time_left`).
"""
from __future__ import annotations

import threading
from typing import Callable, Protocol, Union

from attnviz.errors import AttnvizError
from attnviz.units import human_seconds


class Progress(Protocol):
    """`done` of `total` units finished; `label` says what happens now."""

    def __call__(self, done: int, total: int, label: str = "") -> None: ...


# What a slow function is told to stop by: a threading.Event (set = stop) or a function returning True to stop.
CancelFlag = Union[threading.Event, Callable[[], bool]]


class Cancelled(AttnvizError):
    """A run stopped on request before it finished."""

    def __init__(self, what: str = "The run", kept: str = "nothing was kept"):
        super().__init__(f"{what} was cancelled before it finished ({kept}); start it again to complete it.")


def is_cancelled(cancel: CancelFlag | None) -> bool:
    """True once `cancel` (an Event or a function, None = never) asks to stop."""
    if cancel is None:
        return False
    if isinstance(cancel, threading.Event) or hasattr(cancel, "is_set"):
        return bool(cancel.is_set())
    return bool(cancel())


def check(cancel: CancelFlag | None, what: str = "The run", kept: str = "nothing was kept") -> None:
    """Raise Cancelled when `cancel` asks to stop (call it between units of work)."""
    if is_cancelled(cancel):
        raise Cancelled(what, kept)


def report(progress: Progress | None, done: int, total: int, label: str = "") -> None:
    """progress(done, total, label) when there is a progress callback."""
    if progress is not None:
        progress(done, total, label)


def time_left(elapsed: float, fraction: float, since: float = 0.0) -> float | None:
    """Seconds still to go at the pace measured so far.

    `fraction` of the work was done after `elapsed` seconds (at the last report), `since` seconds ago.
    At that pace the rest takes elapsed * (1 - fraction) / fraction from then, so it counts down between
    reports: that minus `since`. Once a step runs past that (a slower stage), the pace is taken up to now
    instead: (elapsed + since) * (1 - fraction) / fraction. None before the first step (fraction 0: no
    pace measured yet) and once done (fraction 1)."""
    if not 0.0 < fraction < 1.0 or elapsed <= 0:
        return None
    rest = (1.0 - fraction) / fraction
    left = elapsed * rest - since
    return left if left >= 0.5 else (elapsed + since) * rest


def time_left_text(elapsed: float, fraction: float, since: float = 0.0) -> str:
    """'about 30 s left' from the measured pace (time_left); '' before the first step and once done."""
    left = time_left(elapsed, fraction, since)
    return "" if left is None else f"about {human_seconds(left)} left"


def status_text(label: str, elapsed: float, fraction: float, since: float = 0.0, *, cancelling: bool = False,
                waiting: bool = False) -> str:
    """The one line every progress bar shows: what happens now · time so far · time left.

    `fraction` was reached after `elapsed` seconds, `since` seconds ago (see time_left).
    'layer 3 of 30 recorded · 12 s · about 1 min 48 s left'; while waiting for another job,
    'label · waiting for another job to finish'; while cancelling, 'label · 12 s · cancelling…'."""
    if waiting:
        return f"{label} · waiting for another job to finish"
    last = "cancelling…" if cancelling else time_left_text(elapsed, fraction, since)
    return " · ".join(p for p in (label, human_seconds(elapsed + since), last) if p)
