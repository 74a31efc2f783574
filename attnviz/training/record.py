"""`python -m attnviz.training.record [task ...]`: record the runs shipped in assets/runs/."""
from __future__ import annotations

import sys

from attnviz.training.runs import ASSETS, save
from attnviz.units import human_bytes
from attnviz.training.trainer import TrainConfig, train

# The recorded run of each task: seeded, so re-recording gives the same file.
RECORDED = {
    "reverse": TrainConfig(task="reverse"),
    "copy": TrainConfig(task="copy"),
    "sort": TrainConfig(task="sort", steps=600, snapshot_every=12),
    "induction": TrainConfig(task="induction", steps=400, snapshot_every=8),
}


def record(names) -> None:
    ASSETS.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name == "finetune":
            from attnviz.training.finetune import FinetuneConfig, finetune

            run = finetune(FinetuneConfig())
        else:
            run = train(RECORDED[name])
        path = save(run, ASSETS / f"{name}.npz")
        print(f"{path.name}: {run.n_frames} frames, accuracy {run.meta['final_accuracy']:.3f}, "
              f"{run.meta['seconds']:.1f} s, {human_bytes(path.stat().st_size)}")


if __name__ == "__main__":
    record(sys.argv[1:] or list(RECORDED))
