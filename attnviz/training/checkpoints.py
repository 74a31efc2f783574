"""A checkpoint series (HF revisions or local folders of one model) loaded in turn as frames of a Run."""
from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from attnviz.errors import AttnvizError, BadInput, ModelNotFound
from attnviz.training.runs import Run
from attnviz.units import count_text

MAX_CHECKPOINTS = 24  # more would take minutes to load one after another


def parse_series(text: str) -> list[str]:
    """Checkpoint specs from text: one per line or comma-separated; '#' starts a comment.

    A spec is a local folder, a hub id, or 'hub-id@revision' (e.g. EleutherAI/pythia-70m@step1000).
    """
    specs = []
    for line in str(text or "").splitlines():
        line = line.split("#", 1)[0]
        specs += [s.strip() for s in line.split(",") if s.strip()]
    if not specs:
        raise BadInput("List at least one checkpoint: a model folder, a hub id, or hub-id@revision, one per line.")
    if len(specs) > MAX_CHECKPOINTS:
        raise BadInput(f"{len(specs)} checkpoints is too many to load in turn; give at most {MAX_CHECKPOINTS}.")
    return specs


def _step_of(spec: str, index: int) -> int:
    """A training step read from the spec's name (step1000, checkpoint-500), else the index."""
    found = re.findall(r"(?:step|checkpoint)[-_]?(\d+)", spec)
    return int(found[-1]) if found else index


def load_checkpoint(spec: str):
    """LoadedModel for a folder, a hub id or 'hub-id@revision' (eager attention, eval mode)."""
    from attnviz.models import load_model

    if "@" in spec and not Path(spec).expanduser().exists():
        name, revision = spec.rsplit("@", 1)
        return _load_revision(name.strip(), revision.strip())
    return load_model(spec)


def _load_revision(name: str, revision: str):
    import transformers
    from transformers import AutoConfig, AutoTokenizer

    from attnviz.models.hf import AUTO_CLASS, hub_reachable, model_facts, model_kind
    from attnviz.types import LoadedModel

    local_only = not hub_reachable()
    try:
        config = AutoConfig.from_pretrained(name, revision=revision, local_files_only=local_only)
        model = getattr(transformers, AUTO_CLASS[model_kind(config)]).from_pretrained(
            name, revision=revision, config=config, attn_implementation="eager", local_files_only=local_only)
        tok = AutoTokenizer.from_pretrained(name, revision=revision, local_files_only=local_only)
    except (OSError, ValueError) as e:
        where = "is not in the local cache and the hub cannot be reached" if local_only else "could not be loaded"
        raise ModelNotFound(f"Revision {revision!r} of {name} {where} ({str(e).splitlines()[0][:160]}).") from None
    model.eval()
    return LoadedModel(key=f"{name}@{revision}", model=model, tokenizer=tok,
                       facts=model_facts(config, f"{name}@{revision}", "hub / HF cache"))


def checkpoint_series(specs: list[str], text: str, callback=None, max_tokens: int = 64) -> Run:
    """Load each checkpoint in turn and record its attention on `text` as one frame.

    specs: folders / hub ids / 'id@revision' of ONE model at different training steps;
    callback(i, n, spec) before each load. All checkpoints must tokenise `text` the same
    way and have the same layers and heads; otherwise a BadInput names the odd one out.
    """
    from attnviz.extract import extract

    if not specs:
        raise BadInput("List at least one checkpoint.")
    frames, labels, steps, first = [], [], [], None
    start = time.perf_counter()
    for i, spec in enumerate(specs):
        if callback is not None:
            callback(i, len(specs), spec)
        try:
            loaded = load_checkpoint(spec)
        except AttnvizError as e:
            raise type(e)(f"Checkpoint {i + 1} ({spec}): {e}") from None
        with loaded.lock:
            res = extract(loaded, text, max_tokens=max_tokens)
        if first is None:
            first = res
        elif res.tokens != first.tokens or res.attention.shape != first.attention.shape:
            raise BadInput(f"Checkpoint {i + 1} ({spec}) does not match checkpoint 1: "
                           f"{res.n_layers}x{res.n_heads} heads on {count_text(res.seq_len)} tokens versus "
                           f"{first.n_layers}x{first.n_heads} on {first.seq_len}. A series must be one model.")
        frames.append(np.array(res.attention))
        labels.append(Path(spec).name if Path(spec).expanduser().exists() else spec)
        steps.append(_step_of(spec, i))
        del loaded
    if len(set(steps)) != len(steps):  # names carry no distinct steps: number them in order
        steps = list(range(len(steps)))
    nan = np.full(len(frames), np.nan, dtype=np.float32)
    return Run(
        title=f"Checkpoint series of {first.facts.architecture} ({len(frames)} checkpoints)", source="checkpoints",
        frame_steps=np.array(steps, dtype=np.int64), frame_labels=tuple(labels),
        attention={"self": np.stack(frames).astype(np.float32)}, tokens=first.tokens, decoder_tokens=None,
        facts=first.facts, frame_loss=nan, frame_accuracy=nan.copy(),
        meta={"specs": list(specs), "text": text, "seconds": round(time.perf_counter() - start, 3), "completed": True,
              "expect": "Each frame is one checkpoint of the same model, in the order listed."},
    )
