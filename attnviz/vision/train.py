"""Train the small vision transformer on a shipped image set, recording its attention on one probe image
every few steps: a `Run` like the text tasks', so the Training page shows it live and scrubs it after."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.errors import BadInput
from attnviz.models.scratch import stacks_to_numpy
from attnviz.training.runs import Run
from attnviz.training.trainer import Schedule, run_steps, snapshot_steps, warmup_cosine
from attnviz.vision.data import image_set
from attnviz.vision.model import VisionTransformer, VitConfig, forward, patch_tokens, vit_facts


@dataclass(frozen=True)
class VitTrainConfig(Schedule):
    """The vision transformer's run: the shared schedule (900 steps, snapshots every 25, cosine decay to 5%),
    then these."""

    steps: int = 900  # optimisation steps
    snapshot_every: int = 25  # record the probe's attention every k steps (plus step 0 and the last)
    images: str = "digits"  # a key of attnviz.vision.data.IMAGE_SETS
    shift: int = 0  # training images are shifted by up to this many pixels in each direction
    smoothing: float = 0.0  # label smoothing of the cross-entropy
    model: VitConfig | None = None  # architecture; None = VitConfig() with the set's number of classes

    def __post_init__(self):
        image_set(self.images)
        self.check()

    def model_config(self) -> VitConfig:
        base = self.model or VitConfig(seed=self.seed)
        return replace(base, n_classes=len(image_set(self.images).classes), channels=1, image_size=16)


def shifted(images: np.ndarray, rng: np.random.Generator, most: int) -> np.ndarray:
    """Each image (N, C, H, W) moved by a random (dy, dx) in [-most, most]^2, zeros shifted in."""
    if most == 0:
        return images
    out = np.zeros_like(images)
    H, W = images.shape[-2:]
    for i, (dy, dx) in enumerate(rng.integers(-most, most + 1, size=(len(images), 2))):
        out[i, :, max(dy, 0):H + min(dy, 0), max(dx, 0):W + min(dx, 0)] = \
            images[i, :, max(-dy, 0):H + min(-dy, 0), max(-dx, 0):W + min(-dx, 0)]
    return out


def predict(model: VisionTransformer, images: np.ndarray, batch: int = 512) -> np.ndarray:
    """Predicted labels (N,) of images (N, C, H, W)."""
    was = model.training
    model.eval()
    out = [forward(model, images[i:i + batch])[0].argmax(-1).numpy() for i in range(0, len(images), batch)]
    model.train(was)
    return np.concatenate(out)


def image_attention(model: VisionTransformer, image: np.ndarray) -> dict[str, np.ndarray]:
    """{"self": (layer, head, T, T)} of one image (C, H, W)."""
    was = model.training
    model.eval()
    _, att = forward(model, image[None])
    model.train(was)
    return stacks_to_numpy(att)


def probe_index(labels: np.ndarray) -> int:
    """The probe: the first held-out image of the middle class (a fixed choice, so runs compare)."""
    classes = np.unique(labels)
    return int(np.flatnonzero(labels == classes[len(classes) // 2])[0])


def train_vit(config: VitTrainConfig = VitTrainConfig(), callback=None, cancel=None, keep_weights: bool = True) -> Run:
    """Train from scratch; callback(Progress) after every step; cancel stops early (the run so far is returned
    with meta["completed"] False). meta holds the held-out accuracy on every held-out image."""
    old = torch.get_num_threads()
    torch.set_num_threads(max(1, config.threads))
    try:
        return _train(config, callback, cancel, keep_weights)
    finally:
        torch.set_num_threads(old)


def _train(config: VitTrainConfig, callback, cancel, keep_weights) -> Run:
    start = time.perf_counter()
    data = image_set(config.images)
    x_train, y_train, x_held, y_held = data.split(config.seed)
    cfg = config.model_config()
    model = VisionTransformer(cfg)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.05, betas=(0.9, 0.98))
    sched = warmup_cosine(opt, config.warmup, config.steps, 0.05)
    rng = np.random.default_rng(config.seed)
    probe = x_held[probe_index(y_held)]
    quick = slice(0, min(len(y_held), 128))
    frames, f_steps, f_loss, f_acc = [], [], [], []

    def snapshot(step, loss):
        att = image_attention(model, probe)
        frames.append(att["self"])
        acc = float((predict(model, x_held[quick]) == y_held[quick]).mean())
        f_steps.append(step)
        f_loss.append(loss)
        f_acc.append(acc)
        return att, acc

    def batch_loss():
        idx = rng.integers(0, len(y_train), size=config.batch_size)
        logits, _ = forward(model, shifted(x_train[idx], rng, config.shift), grad=True)
        return F.cross_entropy(logits, torch.from_numpy(y_train[idx]), label_smoothing=config.smoothing)

    snapshot(0, float("nan"))
    completed, step, losses = run_steps(config.steps, batch_loss, opt, list(model.parameters()), snapshot,
                                        set(snapshot_steps(config.steps, config.snapshot_every)), start, callback,
                                        cancel, sched)
    final = float((predict(model, x_held) == y_held).mean())
    seconds = time.perf_counter() - start
    meta = {
        "task": "vision", "images": data.name, "classes": list(data.classes), "expect": data.expect,
        "train": {k: v for k, v in asdict(config).items() if k != "model"}, "vit": cfg.to_dict(),
        "seconds": round(seconds, 3), "completed": completed, "steps_done": step, "final_accuracy": final,
        "heldout": int(len(y_held)), "probe": probe.tolist(),
    }
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()} if keep_weights else None
    return Run(
        title=f"Vision transformer on {data.name}" + ("" if completed else f" (cancelled at step {step})"),
        source="vision", frame_steps=np.array(f_steps, dtype=np.int64),
        frame_labels=tuple(f"step {s}" for s in f_steps), attention={"self": np.stack(frames).astype(np.float32)},
        tokens=patch_tokens(cfg.grid.n, cfg.grid.cols), decoder_tokens=None, facts=vit_facts(cfg),
        frame_loss=np.array(f_loss, dtype=np.float32), frame_accuracy=np.array(f_acc, dtype=np.float32),
        loss_steps=np.arange(1, len(losses) + 1, dtype=np.int64), loss_values=np.array(losses, dtype=np.float32),
        meta=meta, weights=weights,
    )


def vit_from_run(run: Run) -> VisionTransformer:
    """The trained model of a vision run, rebuilt from its saved weights."""
    if run.meta.get("task") != "vision" or not run.weights:
        raise BadInput("This run is not a vision transformer with saved weights, so its model cannot be rebuilt.")
    model = VisionTransformer(VitConfig(**run.meta["vit"]))
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in run.weights.items()})
    model.eval()
    return model


if __name__ == "__main__":  # python -m attnviz.vision.train: record the run shipped in assets/runs/vision.npz
    from attnviz.training.runs import ASSETS, save

    recorded = train_vit(VitTrainConfig())
    path = save(recorded, ASSETS / "vision.npz")
    print(f"{path.name}: {recorded.n_frames} frames, accuracy {recorded.meta['final_accuracy']:.3f}, "
          f"{recorded.meta['seconds']:.1f} s")
