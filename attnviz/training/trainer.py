"""Train a scratch transformer on a toy task, snapshotting the probe's attention every k steps."""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.errors import BadInput
from attnviz.models.adapter import run
from attnviz.models.scratch import ScratchConfig, ScratchTransformer, facts_for, stacks_to_numpy
from attnviz.progress import is_cancelled
from attnviz.training.runs import Run
from attnviz.training.tasks import BOS, Batch, Sampler, Task, get_task
from attnviz.types import LoadedModel
from attnviz.units import count_text

# The default architecture per task, chosen so the live demo learns within seconds.
DEFAULT_MODELS = {
    "reverse": dict(d_model=64, n_heads=4, n_layers=1, n_decoder_layers=1, d_ff=128, positional="learned"),
    "copy": dict(d_model=64, n_heads=4, n_layers=1, n_decoder_layers=1, d_ff=128, positional="learned"),
    "sort": dict(d_model=64, n_heads=4, n_layers=2, n_decoder_layers=1, d_ff=128, positional="learned"),
    "induction": dict(d_model=64, n_heads=4, n_layers=2, d_ff=0, positional="learned"),
}


@dataclass(frozen=True)
class Schedule:
    """The optimisation every training run here shares (the text tasks and the vision transformer)."""

    steps: int = 150  # optimisation steps
    batch_size: int = 64  # examples per step
    lr: float = 3e-3  # peak AdamW learning rate (linear warm-up, then cosine decay)
    warmup: int = 30  # warm-up steps
    snapshot_every: int = 3  # record the probe's attention every k steps (plus step 0 and the last)
    seed: int = 0  # seeds weights, batches and held-out set
    threads: int = 1  # torch CPU threads; 1 is fastest for models this small (2 threads spin on a busy machine)

    def check(self) -> None:
        """BadInput for a schedule that cannot run."""
        if self.steps < 1:
            raise BadInput("Train for at least one step.")
        if self.batch_size < 1:
            raise BadInput("The batch size must be at least 1.")
        if self.snapshot_every < 1:
            raise BadInput("Snapshot every k steps needs k >= 1.")
        if not self.lr > 0:
            raise BadInput("The learning rate must be greater than 0.")

    @property
    def n_snapshots(self) -> int:
        return len(snapshot_steps(self.steps, self.snapshot_every))


@dataclass(frozen=True)
class TrainConfig(Schedule):
    """A text task's run (the schedule's fields, then these)."""

    task: str = "reverse"  # a key of attnviz.training.tasks.TASKS
    eval_size: int = 64  # held-out sequences for the accuracy at each snapshot (a quick estimate)
    final_eval_size: int = 512  # held-out sequences for the final accuracy (never trained on)
    model: ScratchConfig | None = None  # architecture; None = DEFAULT_MODELS[task]

    def __post_init__(self):
        get_task(self.task)
        self.check()
        if self.eval_size < 1 or self.final_eval_size < self.eval_size:
            raise BadInput("The held-out size must be at least 1.")

    def model_config(self) -> ScratchConfig:
        """The architecture, with vocabulary, kind and positions fitted to the task."""
        task = get_task(self.task)
        base = self.model or ScratchConfig(**DEFAULT_MODELS[self.task])
        cfg = replace(base, kind=task.kind, vocab_size=task.vocab_size, max_len=max(base.max_len, task.input_len))
        return cfg


@dataclass
class Progress:
    """What the callback receives after every step."""

    step: int  # steps done
    total: int  # steps planned
    loss: float  # loss of this step's batch
    elapsed: float  # seconds since training started
    snapshot: dict[str, np.ndarray] | None  # latest probe attention {stack: (layer, head, q, k)}, if new
    accuracy: float | None  # held-out accuracy at the latest snapshot, if new
    losses: list[float] = field(default_factory=list)  # every step's loss so far


def snapshot_steps(steps: int, every: int) -> list[int]:
    """Steps at which a snapshot is taken: 0, every, 2*every, ..., and the last step."""
    out = list(range(0, steps + 1, every))
    if out[-1] != steps:
        out.append(steps)
    return out


def as_loaded(model: ScratchTransformer) -> LoadedModel:
    """A toy model as the LoadedModel the model adapter runs."""
    return LoadedModel("scratch", model, None, facts_for(model.cfg))


def _loss(model, task: Task, b: Batch, grad: bool = True):
    """(cross-entropy on the counted positions, logits): a training step's forward (with gradients) through the
    model adapter; grad=False for an evaluation."""
    src = torch.from_numpy(b.src)
    tgt_in = None if b.tgt_in is None else torch.from_numpy(b.tgt_in)
    (logits, _), _ = run(as_loaded(model), (src, tgt_in), grad=grad)
    mask = torch.from_numpy(b.loss_mask)
    return F.cross_entropy(logits[mask], torch.from_numpy(b.target)[mask]), logits


@torch.no_grad()
def accuracy(model, task: Task, b: Batch) -> float:
    """Greedy token accuracy on a batch: decoded from <s> alone for encoder-decoders,
    next-token argmax on the counted positions for decoder tasks."""
    was = model.training
    model.eval()
    if task.kind == "encoder-decoder":
        pred = model.greedy(torch.from_numpy(b.src), b.target.shape[1], BOS).numpy()
    else:
        (logits, _), _ = run(as_loaded(model), (torch.from_numpy(b.src), None))
        pred = logits.argmax(-1).numpy()
    model.train(was)
    return float((pred == b.target)[b.loss_mask].mean())


@torch.no_grad()
def probe_attention(model, probe: Batch) -> dict[str, np.ndarray]:
    was = model.training
    model.eval()
    tgt = None if probe.tgt_in is None else torch.from_numpy(probe.tgt_in)
    (_, att), _ = run(as_loaded(model), (torch.from_numpy(probe.src), tgt))
    model.train(was)
    return stacks_to_numpy(att)


def _head(b: Batch, n: int) -> Batch:
    """The first n sequences of a batch."""
    return Batch(b.src[:n], None if b.tgt_in is None else b.tgt_in[:n], b.target[:n], b.loss_mask[:n])


_is_cancelled = is_cancelled  # attnviz.progress: an Event or a function, None = never


def run_steps(steps: int, loss_of_batch: Callable[[], torch.Tensor], opt, params, snapshot, snap_at: set,
              start: float, callback=None, cancel=None, sched=None) -> tuple[bool, int, list[float]]:
    """The optimiser loop both trainers share: for each step, the loss of a fresh batch, backward,
    gradient norm clipped to 1, an optimiser (and scheduler) step; snapshot(step, loss) at the steps in
    snap_at; callback(Progress) after every step; stops early when cancel is set, then snapshots the
    state at that step unless it was just taken. Returns (completed, last step done, losses)."""
    losses: list[float] = []
    completed, step = True, 0
    for step in range(1, steps + 1):
        if _is_cancelled(cancel):
            completed, step = False, step - 1
            break
        loss = loss_of_batch()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(float(loss.detach()))
        att = acc = None
        if step in snap_at:
            att, acc = snapshot(step, losses[-1])
        if callback is not None:
            callback(Progress(step, steps, losses[-1], time.perf_counter() - start, att, acc, losses))
    if not completed and step > 0 and step not in snap_at:
        snapshot(step, losses[-1])  # the state at the moment of cancelling
    return completed, step, losses


def train(config: TrainConfig = TrainConfig(), callback: Callable[[Progress], None] | None = None,
          cancel=None, keep_weights: bool = True) -> Run:
    """Train from scratch and record the probe's attention every `snapshot_every` steps.

    callback(Progress) runs after every step; cancel is a threading.Event or a function
    returning True to stop early: the run so far is returned with meta["completed"] False.
    """
    task = get_task(config.task)
    cfg = config.model_config()
    if task.input_len > cfg.max_len and cfg.positional in ("learned", "sinusoidal"):
        raise BadInput(f"The task needs {count_text(task.input_len)} positions; the model has {cfg.max_len}.")
    old_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, config.threads))
    try:
        return _train(config, task, cfg, callback, cancel, keep_weights)
    finally:
        torch.set_num_threads(old_threads)


def warmup_cosine(opt, warmup: int, steps: int, floor: float):
    """The learning-rate schedule both trainers use: linear warm-up over `warmup` steps, then cosine decay to
    `floor` times the peak at `steps`."""
    def lr_at(step):
        if step < warmup:
            return (step + 1) / warmup
        t = (step - warmup) / max(1, steps - warmup)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, t)))

    return torch.optim.lr_scheduler.LambdaLR(opt, lr_at)


def _train(config, task, cfg, callback, cancel, keep_weights) -> Run:
    start = time.perf_counter()  # the reported seconds include building the model and every snapshot
    model = ScratchTransformer(cfg)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01, betas=(0.9, 0.98))

    sched = warmup_cosine(opt, config.warmup, config.steps, 0.1)
    sampler = Sampler(task, config.seed, n_heldout=config.final_eval_size)
    quick_eval = _head(sampler.heldout, config.eval_size)
    probe = task.probe()
    snap_at = set(snapshot_steps(config.steps, config.snapshot_every))

    frames: dict[str, list] = {}
    f_steps, f_loss, f_acc = [], [], []

    def snapshot(step, loss):
        att = probe_attention(model, probe)
        for k, v in att.items():
            frames.setdefault(k, []).append(v)
        acc = accuracy(model, task, quick_eval)
        f_steps.append(step)
        f_loss.append(loss)
        f_acc.append(acc)
        return att, acc

    first_loss = float(_loss(model, task, sampler.heldout, grad=False)[0])
    snapshot(0, first_loss)
    completed, step, losses = run_steps(
        config.steps, lambda: _loss(model, task, sampler.batch(config.batch_size))[0], opt, list(model.parameters()),
        snapshot, snap_at, start, callback, cancel, sched)
    final_acc = accuracy(model, task, sampler.heldout)  # on every held-out sequence
    seconds = time.perf_counter() - start
    src_tokens, dec_tokens = task.probe_tokens()
    meta = {
        "task": task.name, "expect": task.expect, "train": {k: v for k, v in asdict(config).items() if k != "model"},
        "model": cfg.to_dict(), "seconds": round(seconds, 3), "completed": completed, "steps_done": step,
        "final_accuracy": final_acc, "heldout": config.final_eval_size, "vocab": list(task.vocab),
    }
    weights = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()} if keep_weights else None
    return Run(
        title=task.title + ("" if completed else f" (cancelled at step {step})"), source="toy",
        frame_steps=np.array(f_steps, dtype=np.int64), frame_labels=tuple(f"step {s}" for s in f_steps),
        attention={k: np.stack(v).astype(np.float32) for k, v in frames.items()},
        tokens=src_tokens, decoder_tokens=dec_tokens, facts=facts_for(cfg, f"scratch {task.name}"),
        frame_loss=np.array(f_loss, dtype=np.float32), frame_accuracy=np.array(f_acc, dtype=np.float32),
        loss_steps=np.arange(1, len(losses) + 1, dtype=np.int64), loss_values=np.array(losses, dtype=np.float32),
        meta=meta, weights=weights,
    )


def model_from_run(run: Run) -> ScratchTransformer:
    """Rebuild a toy run's trained model from its saved weights (for new inputs)."""
    if not run.weights or "model" not in run.meta:
        raise BadInput("This run has no saved weights, so its model cannot be rebuilt.")
    model = ScratchTransformer(ScratchConfig(**run.meta["model"]))
    model.load_state_dict({k: torch.from_numpy(np.asarray(v, dtype=np.float32)) for k, v in run.weights.items()})
    model.eval()
    return model
