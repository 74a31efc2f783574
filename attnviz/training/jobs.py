"""What a running training job shows live: the loss curve so far, the latest attention snapshot, accuracy.

The thread, progress, Cancel and polling are attnviz.ui.jobs (shared with the complexity benchmark);
this turns the trainer's Progress callbacks into those reports and keeps the training-only state.
"""
from __future__ import annotations

from typing import Callable


class LiveTraining:
    """The live view of one training job, updated from the trainer's callback."""

    def __init__(self):
        self.losses: list[float] = []
        self.snapshot = None  # latest {stack: (layer, head, q, k)}
        self.snapshot_step = 0
        self.accuracy = None

    def callback(self, report: Callable[[int, int, str], None]) -> Callable:
        """A trainer callback(progress) that records the live state and reports step of total."""

        def on_progress(progress) -> None:
            self.losses = list(progress.losses)
            if progress.snapshot is not None:
                self.snapshot, self.snapshot_step = progress.snapshot, progress.step
            if progress.accuracy is not None:
                self.accuracy = progress.accuracy
            report(progress.step, progress.total, f"step {progress.step} of {progress.total}")

        return on_progress
