"""Measured durations of slow tasks on this machine, kept in the user's cache, so that hints say what was measured.

`record(model, task, seconds, detail)` keeps the last complete run of each (model, task) with its
conditions (what was run, the machine's load average); `hint(model, task)` turns it into the words a
page shows beside a slow button: "last time here: 33 s (11 tokens; machine load 4.1 on 2 cores)".
Nothing is invented: a task never timed here says so.
"""
from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from attnviz.runtime import cache_dir, cpu_threads, write_atomically
from attnviz.units import human_seconds

FILE = "timings.json"
NOT_TIMED = "not timed on this machine yet"

# The tasks timed (one name each, so that pages and loaders agree).
LOAD = "load"  # loading a model the ordinary way (HF folder, hub cache, packaged safetensors)
LOAD_GGUF = "load from GGUF"  # dequantising a GGUF file (and saving the converted copy)
LOAD_COPY = "load the converted copy"  # reading the converted copy from the cache
TRUST = "trust report"
RECORDING = "long recording"
SINKS = "sink experiment"
ROLES = "head roles over the examples"

_lock = threading.Lock()


@dataclass(frozen=True)
class Timing:
    seconds: float  # wall-clock duration of the last complete run
    detail: str  # what was run: "11 tokens, 32 steps, randomisation check on"
    when: float  # time.time() when it finished
    load: float | None  # the machine's 1-minute load average when it finished (None where unknown)
    cores: int  # CPUs this process could use


def path() -> Path:
    return cache_dir() / FILE


def _read() -> dict:
    try:
        data = json.loads(path().read_text())
    except (OSError, ValueError):  # no file yet, or a damaged one: start again
        return {}
    return data if isinstance(data, dict) else {}


def _key(model: str, task: str) -> str:
    return f"{model}|{task}"


def record(model: str, task: str, seconds: float, detail: str = "") -> None:
    """Keep `seconds` as the last duration of (model, task). Best effort: an unwritable cache is ignored."""
    try:
        load = round(os.getloadavg()[0], 1)
    except (AttributeError, OSError):
        load = None
    entry = Timing(round(float(seconds), 2), detail, time.time(), load, cpu_threads())
    with _lock:
        data = _read()
        data[_key(model, task)] = asdict(entry)
        try:
            write_atomically(path(), json.dumps(data, indent=1, sort_keys=True))
        except OSError:
            pass


def last(model: str, task: str) -> Timing | None:
    """The last recorded run of (model, task), or None."""
    raw = _read().get(_key(model, task))
    try:
        return Timing(**raw) if isinstance(raw, dict) else None
    except TypeError:  # written by another version
        return None


def conditions(t: Timing) -> str:
    """'11 tokens; machine load 4.1 on 2 cores'."""
    parts = [t.detail] if t.detail else []
    if t.load is not None:
        parts.append(f"machine load {t.load:g} on {t.cores} core{'s' if t.cores != 1 else ''}")
    return "; ".join(parts)


def hint(model: str, task: str, short: bool = False) -> str:
    """'last time here: 33 s (conditions)', 'last time here: 33 s' when short, or 'not timed on this machine yet'."""
    t = last(model, task)
    if t is None:
        return NOT_TIMED
    cond = conditions(t)
    return f"last time here: {human_seconds(t.seconds)}" + ("" if short or not cond else f" ({cond})")


@contextmanager
def timed(model: str, task: str, detail: str = ""):
    """Record the duration of the block when it completes (not when it raises: a cancelled or failed run
    says nothing about the next one)."""
    t0 = time.perf_counter()
    yield
    record(model, task, time.perf_counter() - t0, detail)
