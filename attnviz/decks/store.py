"""Working copies of decks on the server's disk, one JSON file per deck id in the user's cache, so a
deck and its unsaved edits outlive a page load, a new browser session and a server restart; beside
each, the slide being presented and when the lecture started (for the presenter view).

  <folder>/<id>.json        the deck, in the same format as a saved deck file
  <folder>/<id>.at.json     {"slide": 3, "started": 1700000000.0, "since": 1700000120.0}

The folder is $ATTNVIZ_DECK_DIR, else the decks/ folder of attnviz's cache (runtime.cache_dir()).
An id is 8-40 letters, digits, '-' or '_' (it comes from a URL: nothing else reaches the disk)."""
from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from attnviz.decks import deck as dk
from attnviz.runtime import write_atomically
from attnviz.errors import BadInput

MAX_COPIES = 200  # working copies kept; the least recently changed go first
_ID = re.compile(r"^[A-Za-z0-9_-]{8,40}$")


@dataclass(frozen=True)
class Copy:
    deck_id: str
    title: str
    slides: int
    changed: float  # time of the last change (seconds since the epoch)


def folder() -> Path:
    own = os.environ.get("ATTNVIZ_DECK_DIR", "").strip()
    if own:
        return Path(own).expanduser()
    from attnviz.runtime import cache_dir

    return cache_dir() / "decks"


def new_id() -> str:
    return secrets.token_urlsafe(9)  # 12 characters of [A-Za-z0-9_-]


def valid_id(deck_id) -> bool:
    return isinstance(deck_id, str) and bool(_ID.match(deck_id))


def path(deck_id: str) -> Path:
    """The working copy's file. Raises BadInput for an id that is not one."""
    if not valid_id(deck_id):
        raise BadInput("This link's deck id is not valid: it has 8 to 40 letters, digits, '-' or '_'.")
    return folder() / f"{deck_id}.json"


def save(deck_id: str, deck: dk.Deck) -> Path:
    """Write the working copy (and forget the oldest copies beyond MAX_COPIES); returns its path."""
    target = path(deck_id)
    write_atomically(target, dk.to_json(deck))
    _prune()
    return target


def load(deck_id: str, pages: set[str], models: set[str] | None = None) -> dk.Deck | None:
    """The working copy, or None when there is none (or it cannot be read)."""
    if not valid_id(deck_id):
        return None
    try:
        return dk.from_json(path(deck_id).read_bytes(), pages, models).deck
    except (OSError, BadInput):
        return None


def changed(deck_id: str) -> float | None:
    try:
        return path(deck_id).stat().st_mtime
    except (OSError, BadInput):
        return None


def recent(limit: int = 10) -> list[Copy]:
    """The most recently changed working copies with at least one slide, newest first."""
    out = []
    for f in sorted(_copies(), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            raw = json.loads(f.read_text(encoding="utf-8"))
            n = len(raw.get("slides") or [])
        except (OSError, ValueError, AttributeError):
            continue
        if n:
            out.append(Copy(f.stem, str(raw.get("title") or "Untitled deck"), n, f.stat().st_mtime))
        if len(out) >= limit:
            break
    return out


def set_position(deck_id: str, slide: int, restart: bool = False) -> dict:
    """Record that slide `slide` (from 0) is on screen; restart=True starts the lecture's clock again.
    Returns the position recorded."""
    now = time.time()
    old = position(deck_id) or {}
    pos = {"slide": int(slide),
           "started": now if restart or "started" not in old else old["started"],
           "since": old.get("since", now) if old.get("slide") == int(slide) and not restart else now}
    write_atomically(folder() / f"{deck_id}.at.json", json.dumps(pos))
    return pos


def position(deck_id: str) -> dict | None:
    """{"slide", "started", "since"} of the deck being presented, or None."""
    if not valid_id(deck_id):
        return None
    try:
        raw = json.loads((folder() / f"{deck_id}.at.json").read_text(encoding="utf-8"))
        return {"slide": int(raw["slide"]), "started": float(raw["started"]), "since": float(raw["since"])}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _copies() -> list[Path]:
    try:
        return [p for p in folder().glob("*.json") if valid_id(p.stem)]
    except OSError:
        return []


def _prune() -> None:
    copies = _copies()
    if len(copies) <= MAX_COPIES:
        return
    for old in sorted(copies, key=lambda p: p.stat().st_mtime)[:len(copies) - MAX_COPIES]:
        old.unlink(missing_ok=True)
        (old.parent / f"{old.stem}.at.json").unlink(missing_ok=True)
