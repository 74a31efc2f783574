"""A training job in a background thread: live progress for a page to poll, a cancel flag, the Run."""
from __future__ import annotations

import threading
import time
import traceback
from typing import Callable

from attnviz.errors import AttnvizError

# One job trains at a time per server: two at once would halve each one's speed on 2 cores.
_RUNNING = threading.Semaphore(1)


class Job:
    """Runs `work(callback, cancel)` (which returns a Run) in a daemon thread.

    The page reads .step, .total, .losses, .snapshot, .accuracy, .message while it runs,
    sets the cancel flag with .cancel(), and takes .run (or .error, a plain sentence) when
    .done is True.
    """

    def __init__(self, work: Callable, label: str = "training"):
        self.label = label
        self.step, self.total = 0, 1
        self.losses: list[float] = []
        self.snapshot = None  # latest {stack: (layer, head, q, k)}
        self.snapshot_step = 0
        self.accuracy = None
        self.message = "waiting for the CPU…"
        self.run = None
        self.error: str | None = None
        self.started = time.perf_counter()
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(work,), daemon=True, name=f"attnviz-{label}")
        self._thread.start()

    def _callback(self, progress) -> None:
        self.step, self.total = progress.step, progress.total
        self.losses = list(progress.losses)
        if progress.snapshot is not None:
            self.snapshot, self.snapshot_step = progress.snapshot, progress.step
        if progress.accuracy is not None:
            self.accuracy = progress.accuracy
        self.message = f"step {progress.step} of {progress.total}"

    def _main(self, work) -> None:
        try:
            with _RUNNING:
                self.started = time.perf_counter()
                self.message = "starting…"
                self.run = work(self._callback, self._cancel)
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
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)
