"""Fine-tune a private copy of the packaged BERT on labelled template sentences, snapshotting attention."""
from __future__ import annotations

import copy
import itertools
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from attnviz.errors import BadInput
from attnviz.training.runs import Run
from attnviz.training.trainer import run_steps, snapshot_steps

SENTENCES = Path(__file__).resolve().parent.parent.parent / "assets" / "finetune_sentiment.json"


@dataclass(frozen=True)
class FinetuneConfig:
    steps: int = 120  # optimisation steps (one batch each)
    batch_size: int = 16  # sentences per step
    lr: float = 1e-5  # AdamW learning rate for the encoder and the new classifier (1e-4 learns the templates in ~16 steps)
    snapshot_every: int = 4  # record the probe's attention every k steps (plus step 0 and the last)
    freeze_embeddings: bool = True  # keep the word embeddings fixed (faster, and the heads must adapt)
    seed: int = 0  # seeds the classifier head and the batch order
    threads: int = 1  # torch CPU threads; 1 beats 2 for small batches on a shared machine
    probe: str = ""  # sentence whose attention is recorded; "" = the probe in the sentence file

    def __post_init__(self):
        if self.steps < 1 or self.batch_size < 1 or self.snapshot_every < 1:
            raise BadInput("Steps, batch size and snapshot interval must all be at least 1.")
        if not self.lr > 0:
            raise BadInput("The learning rate must be greater than 0.")


def timing_note(meta: dict) -> str | None:
    """How long a run took, with how it was measured: its wall-clock time, the machine's load average when it
    ended and the processor time of the training thread (None for a run recorded without them). On a busy
    machine the wall clock says more about the machine than about fine-tuning: the note says so."""
    cpu, wall, load, cores = (meta.get(k) for k in ("cpu_seconds", "seconds", "load_average", "cpu_count"))
    if cpu is None or wall is None or load is None or not cores:
        return None
    from attnviz.units import human_seconds

    busy = load > cores
    return (f"Took {human_seconds(wall)} of wall-clock time {'while the machine was busy ' if busy else ''}"
            f"(load average {load:.1f} on {cores} cores; the training thread had {human_seconds(cpu)} of processor "
            "time)" + (": a live run on a quieter machine takes less." if busy else "."))


def template_sentences(path: Path = SENTENCES) -> tuple[list[tuple[str, int]], list[tuple[str, int]], str]:
    """(training pairs, held-out pairs, probe): (sentence, label 1 = positive) from the template file."""
    spec = json.loads(Path(path).read_text(encoding="utf-8"))

    def expand(nouns):
        out = []
        for (template, negated), noun in itertools.product(spec["templates"], nouns):
            for adj, positive in [(a, 1) for a in spec["positive"]] + [(a, 0) for a in spec["negative"]]:
                out.append((template.format(noun=noun, adj=adj), positive ^ int(negated)))
        return out

    return expand(spec["nouns"]), expand(spec["heldout_nouns"]), spec["probe"]


def finetune(config: FinetuneConfig = FinetuneConfig(), loaded=None, callback=None, cancel=None) -> Run:
    """Fine-tune the packaged MiniLM (a private copy: the shared model is never touched).

    loaded: a LoadedModel to copy (default: load "minilm" afresh). A mean-pooled linear
    classifier is trained on the template sentences; the probe sentence's attention
    (layer, head, n, n) is recorded every `snapshot_every` steps with the held-out accuracy.
    callback(Progress) after every step; cancel: threading.Event or function, stops early.
    """
    import torch

    from attnviz.extract import extract
    from attnviz.models import load_model
    from attnviz.models.adapter import run
    from attnviz.types import LoadedModel

    start, cpu_start = time.perf_counter(), time.thread_time()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, config.threads))
    try:
        if loaded is None:
            loaded = load_model("minilm")
            model = loaded.model  # freshly loaded, ours alone
        else:
            with loaded.lock:
                model = copy.deepcopy(loaded.model)
        tok = loaded.tokenizer
        own = LoadedModel(key=loaded.key, model=model, tokenizer=tok, facts=loaded.facts)
        train_set, held, probe = template_sentences()
        probe = config.probe.strip() or probe

        gen = torch.Generator().manual_seed(config.seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            head = torch.nn.Linear(model.config.hidden_size, 2)
        emb = model.get_input_embeddings()
        emb.weight.requires_grad_(not config.freeze_embeddings)
        params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
        opt = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.01)
        model.eval()  # no dropout: the attention changes come from the weights alone

        def logits_of(pairs, grad: bool = True):  # a training step's forward, with gradients (grad=False: evaluation)
            enc = tok([s for s, _ in pairs], padding=True, return_tensors="pt")
            hidden = run(own, dict(enc), grad=grad)[0].last_hidden_state  # (B, T, d_model)
            m = enc["attention_mask"].unsqueeze(-1).float()
            return head((hidden * m).sum(1) / m.sum(1))  # masked mean pooling, as MiniLM's own

        held_sample = [held[i] for i in np.random.default_rng(config.seed).permutation(len(held))[:96]]
        held_labels = torch.tensor([y for _, y in held_sample])

        def held_accuracy():
            with torch.no_grad():
                return float((logits_of(held_sample, grad=False).argmax(-1) == held_labels).float().mean())

        frames, f_steps, f_loss, f_acc = [], [], [], []
        first = None

        def snapshot(step, loss):
            nonlocal first
            with torch.no_grad():
                res = extract(own, probe)
            first = first or res
            frames.append(np.array(res.attention))
            f_steps.append(step)
            f_loss.append(loss)
            f_acc.append(held_accuracy())
            return {"self": frames[-1]}, f_acc[-1]

        snapshot(0, float("nan"))
        snap_at = set(snapshot_steps(config.steps, config.snapshot_every))

        def batch_loss():
            idx = torch.randint(len(train_set), (config.batch_size,), generator=gen).tolist()
            batch = [train_set[i] for i in idx]
            return torch.nn.functional.cross_entropy(logits_of(batch), torch.tensor([y for _, y in batch]))

        completed, step, losses = run_steps(config.steps, batch_loss, opt, params, snapshot, snap_at, start,
                                            callback, cancel)
    finally:
        torch.set_num_threads(old_threads)
    seconds, cpu_seconds = time.perf_counter() - start, time.thread_time() - cpu_start
    if not frames:
        raise BadInput("Fine-tuning recorded nothing.")
    # the wall-clock seconds depend on what else the machine was doing: keep the processor time of this thread
    # (torch works in it with one thread) and the load beside them, so a recorded run says how it was measured
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    meta = {"task": "sentiment", "finetune": asdict(config), "seconds": round(seconds, 3),
            "cpu_seconds": round(cpu_seconds, 3), "load_average": round(load, 2), "cpu_count": os.cpu_count(),
            "completed": completed,
            "steps_done": step, "final_accuracy": f_acc[-1], "heldout": len(held_sample),
            "expect": "Compare layer 0 with layer 5 (settling grid, entropy): the first layers barely move, while "
                      "the upper layers, closest to the new classifier, shift most; watch the rows of 'not' and "
                      "the adjective."}
    title = f"Fine-tuning {loaded.key} on template sentiment" + ("" if completed else f" (cancelled at step {step})")
    return Run(
        title=title, source="finetune", frame_steps=np.array(f_steps, dtype=np.int64),
        frame_labels=tuple(f"step {s}" for s in f_steps), attention={"self": np.stack(frames).astype(np.float32)},
        tokens=first.tokens, decoder_tokens=None, facts=first.facts,
        frame_loss=np.array(f_loss, dtype=np.float32), frame_accuracy=np.array(f_acc, dtype=np.float32),
        loss_steps=np.arange(1, len(losses) + 1, dtype=np.int64), loss_values=np.array(losses, dtype=np.float32),
        meta=meta,
    )
