"""A recorded training run (attention snapshots over time) and its .npz file format.

File format (version 1), one `numpy.savez_compressed` archive, no pickles:
  header             uint8 bytes of a UTF-8 JSON object:
                     {"format": "attnviz-run", "version": 1, "title", "source" ("toy",
                      "finetune", "checkpoints"), "frame_labels": [...], "tokens": [...],
                      "decoder_tokens": [...] or null, "facts": {ModelFacts fields},
                      "meta": {free JSON: configs, seconds, completed, accuracy ...},
                      "stacks": ["self", ...], "weights": [parameter names]}
  frame_steps        int64 (frame,): training step of each snapshot
  frame_loss         float32 (frame,): training loss at the snapshot (NaN if unknown)
  frame_accuracy     float32 (frame,): held-out accuracy at the snapshot (NaN if unknown)
  loss_steps         int64 (n,), loss_values float32 (n,): the per-step loss curve
  att_<stack>        float16 (frame, layer, head, query, key) for each stack in header
  w_<i>              float32 arrays: the final weights (names in header "weights"), optional
"""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from attnviz.errors import BadInput
from attnviz.training.evolution import head_entropy, settle_frames
from attnviz.types import AttentionResult, ModelFacts

FORMAT = "attnviz-run"
VERSION = 1
ASSETS = Path(__file__).resolve().parent.parent.parent / "assets" / "runs"


@dataclass
class Run:
    """Attention on one probe input at several moments of training (the frames)."""

    title: str  # shown above the evolution view
    source: str  # "toy", "finetune" or "checkpoints"
    frame_steps: np.ndarray  # int (frame,): training step of each frame
    frame_labels: tuple[str, ...]  # one label per frame ("step 120", a checkpoint name)
    attention: dict[str, np.ndarray]  # stack -> float32 (frame, layer, head, query, key)
    tokens: tuple[str, ...]  # probe input tokens (the keys of "self" and "cross")
    decoder_tokens: tuple[str, ...] | None  # encoder-decoder probe decoder input
    facts: ModelFacts  # the model the frames come from
    frame_loss: np.ndarray  # float (frame,), NaN where unknown
    frame_accuracy: np.ndarray  # float (frame,), NaN where unknown
    loss_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # per-step curve x
    loss_values: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))  # per-step curve y
    meta: dict = field(default_factory=dict)  # configs, seconds, completed, final accuracy ...
    weights: dict[str, np.ndarray] | None = None  # final parameters (toy runs), for new inputs

    @property
    def n_frames(self) -> int:
        return len(self.frame_steps)

    @property
    def stacks(self) -> tuple[str, ...]:
        return tuple(self.attention)

    @property
    def completed(self) -> bool:
        return bool(self.meta.get("completed", True))

    def result(self, frame: int = -1) -> AttentionResult:
        """The attention of one frame as an AttentionResult (for every inspection page)."""
        from attnviz.models.scratch import result_from_arrays

        arrays = {k: v[frame] for k, v in self.attention.items()}
        ids = tuple(range(len(self.tokens)))
        return result_from_arrays(arrays, self.facts, self.tokens, ids, self.decoder_tokens,
                                  special=("<s>", "[CLS]", "[SEP]"), text=f"{self.title} · {self.frame_labels[frame]}")

    def entropy(self, stack: str = "self") -> np.ndarray:
        """(frame, layer, head) mean row entropy in nats."""
        return head_entropy(self.attention[stack])

    def settled(self, stack: str = "self", tol: float = 0.1) -> np.ndarray:
        """int (layer, head): frame index from which each head stays near its final map."""
        return settle_frames(self.attention[stack], tol)


def to_bytes(run: Run) -> bytes:
    """The run as .npz bytes (format in the module docstring)."""
    names = list(run.weights or {})
    header = {
        "format": FORMAT, "version": VERSION, "title": run.title, "source": run.source,
        "frame_labels": list(run.frame_labels), "tokens": list(run.tokens),
        "decoder_tokens": None if run.decoder_tokens is None else list(run.decoder_tokens),
        "facts": asdict(run.facts), "meta": run.meta, "stacks": list(run.attention), "weights": names,
    }
    arrays = {
        "header": np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8),
        "frame_steps": np.asarray(run.frame_steps, dtype=np.int64),
        "frame_loss": np.asarray(run.frame_loss, dtype=np.float32),
        "frame_accuracy": np.asarray(run.frame_accuracy, dtype=np.float32),
        "loss_steps": np.asarray(run.loss_steps, dtype=np.int64),
        "loss_values": np.asarray(run.loss_values, dtype=np.float32),
    }
    for stack, frames in run.attention.items():
        arrays[f"att_{stack}"] = np.asarray(frames, dtype=np.float16)
    for i, name in enumerate(names):
        arrays[f"w_{i}"] = np.asarray(run.weights[name], dtype=np.float32)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def save(run: Run, path) -> Path:
    path = Path(path)
    path.write_bytes(to_bytes(run))
    return path


def _renormalise(frames: np.ndarray) -> np.ndarray:
    """float16 rows summed back to exactly 1 (rows that were all zero stay zero)."""
    a = frames.astype(np.float32)
    total = a.sum(axis=-1, keepdims=True)
    return np.divide(a, total, out=np.zeros_like(a), where=total > 0)


def from_bytes(data: bytes, name: str = "the file") -> Run:
    """Read a run written by `to_bytes`. Raises BadInput with a plain message otherwise."""
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
        files = set(archive.files)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
        raise BadInput(f"{name} is not a readable .npz archive, so it is not an attnviz run ({e}).") from None
    if "header" not in files:
        raise BadInput(f"{name} is an .npz archive but not an attnviz run (it has no header).")
    try:
        header = json.loads(archive["header"].tobytes().decode("utf-8"))
    except Exception:
        raise BadInput(f"The header of {name} is damaged (not UTF-8 JSON).") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise BadInput(f"{name} is an .npz archive from another program, not an attnviz run.")
    if header.get("version") != VERSION:
        raise BadInput(f"{name} uses run format version {header.get('version')}; this attnviz reads version {VERSION}.")
    try:
        stacks = header["stacks"]
        attention = {s: _renormalise(archive[f"att_{s}"]) for s in stacks}
        steps = archive["frame_steps"]
        n = len(steps)
        tokens = tuple(header["tokens"])
        dec = header["decoder_tokens"]
        for s, frames in attention.items():
            q_len = len(tokens) if s == "self" else len(dec or ())
            k_len = len(dec or ()) if s == "decoder" else len(tokens)
            if frames.ndim != 5 or frames.shape[0] != n or frames.shape[3:] != (q_len, k_len):
                raise ValueError(f"stack {s} has shape {frames.shape}")
        weights = {w: archive[f"w_{i}"] for i, w in enumerate(header.get("weights") or [])} or None
        run = Run(
            title=str(header["title"]), source=str(header["source"]), frame_steps=steps,
            frame_labels=tuple(header["frame_labels"]), attention=attention, tokens=tokens,
            decoder_tokens=None if dec is None else tuple(dec), facts=ModelFacts(**header["facts"]),
            frame_loss=archive["frame_loss"], frame_accuracy=archive["frame_accuracy"],
            loss_steps=archive["loss_steps"], loss_values=archive["loss_values"],
            meta=dict(header.get("meta") or {}), weights=weights,
        )
        if len(run.frame_labels) != n or len(run.frame_loss) != n or n == 0:
            raise ValueError("frame counts disagree")
    except BadInput:
        raise
    except (KeyError, ValueError, TypeError, zipfile.BadZipFile, OSError, EOFError) as e:
        raise BadInput(f"{name} claims to be an attnviz run but is damaged or incomplete ({e}).") from None
    return run


def load(path) -> Run:
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"There is no run file {path}.")
    return from_bytes(path.read_bytes(), path.name)


def recorded_runs() -> dict[str, Path]:
    """task name -> the recorded run shipped in assets/runs/."""
    return {p.stem: p for p in sorted(ASSETS.glob("*.npz"))}
