"""A converted copy of a GGUF model in the user's cache: dequantised once, saved as safetensors, read in seconds after.

transformers reads a GGUF file by parsing it three times (config, weights, tokenizer) and dequantising
every tensor: for SmolLM2-135M, 32.5 s here with the machine at load 3-5 and 2-3 min at load 11-22,
where its converted copy loads in 1.5-3 s. The first load saves what it built (float32 weights,
config, tokenizer) with `save_pretrained` into `<cache>/models/<file stem>-<size>-<mtime>/`; the next
loads read that folder like any HF model folder. The folder is written under a temporary name and
renamed when complete, with a marker file written last that lists every file's size; a folder without
a matching marker, with a file of the wrong size, or that fails to load is removed and the GGUF file
is read again. A changed GGUF file (other size or modification time) gets a new folder.
"""
from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from attnviz.runtime import cache_dir, weights_bytes

MARKER = "attnviz-converted.json"  # written last: a folder without it is incomplete
SPACE_MARGIN = 1.5  # free disk space needed, as a multiple of the weights' bytes, before a copy is written
STALE_SECONDS = 3600  # a temporary folder untouched this long was left by a process that stopped while writing


def folder_for(source: Path) -> Path:
    """The copy's folder for the GGUF file `source`: named after its stem, size and modification time."""
    st = Path(source).stat()
    return cache_dir() / "models" / f"{Path(source).stem}-{st.st_size}-{st.st_mtime_ns}"


def _fingerprint(source: Path) -> dict:
    st = Path(source).stat()
    return {"source": str(Path(source).resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def is_complete(folder: Path, source: Path) -> bool:
    """True when `folder` holds a finished copy of `source`: its marker names this file (size and time) and
    every file it lists is there with the size it had when written."""
    try:
        marker = json.loads((folder / MARKER).read_text())
        if marker.get("of") != _fingerprint(source):
            return False
        files = marker["files"]
        return bool(files) and all((folder / name).stat().st_size == size for name, size in files.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def discard(folder: Path) -> None:
    """Remove a copy (damaged, partial or stale); never raises."""
    shutil.rmtree(folder, ignore_errors=True)


def save(model, tokenizer, folder: Path, source: Path) -> bool:
    """Save `model` and `tokenizer` (as read from `source`) as the copy in `folder`; whether a copy was written.

    Written into a temporary folder beside it and renamed when complete, so a reader never sees half a copy;
    skipped (False) when the disk has too little room or writing fails. The model is not changed."""
    folder = Path(folder)
    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(parent).free < SPACE_MARGIN * weights_bytes(model):
            return False
    except OSError:
        return False
    for stale in parent.glob(f".{folder.name}-*"):  # left by a process that stopped while writing (not one writing now)
        try:
            if time.time() - stale.stat().st_mtime > STALE_SECONDS:
                discard(stale)
        except OSError:
            pass
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{folder.name}-"))
    quantizer = getattr(model, "hf_quantizer", None)
    try:
        # transformers refuses to save a model read from GGUF ("not serializable") although its weights are
        # plain dequantised float32: save it as the ordinary model it is, then put the marker back.
        model.hf_quantizer = None
        try:
            model.save_pretrained(tmp)
        finally:
            model.hf_quantizer = quantizer
        config = json.loads((tmp / "config.json").read_text())
        if config.pop("quantization_config", None) is not None:  # the weights saved are plain float32
            (tmp / "config.json").write_text(json.dumps(config, indent=2))
        tokenizer.save_pretrained(tmp)
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / MARKER).write_text(json.dumps({"of": _fingerprint(source), "files": files}, indent=1))
        if folder.exists():
            discard(folder)
        tmp.rename(folder)
        return True
    except Exception:  # the copy is only a speed-up: any failure leaves the GGUF file as the source
        discard(tmp)
        return False
