"""A deck: slides, each one of the app's views (a share link: page path + query parameters) with a
title and speaker notes, saved as a small versioned JSON file.

  {"format": "attnviz-deck", "version": 1, "title": "...",
   "slides": [{"title": "...", "page": "heatmap", "params": {"layer": "2", "head": "7"}, "notes": "..."}]}

Loading validates everything and loads what it can: a slide naming a page that does not exist, or a
model that is not available, is left out and listed; a file that is not a deck, or comes from a newer
version of the format, is refused with a plain sentence."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qsl, urlencode, urlsplit

from attnviz.errors import BadInput

FORMAT = "attnviz-deck"
VERSION = 1
MAX_BYTES = 1_000_000  # a deck is a few kB; anything this big is not one
MAX_SLIDES = 200
MAX_TITLE = 200
MAX_NOTES = 20_000


@dataclass(frozen=True)
class Slide:
    title: str
    page: str  # the page's URL path without the slash ("heatmap"); "" = the home page
    params: dict = field(default_factory=dict)  # the view's query parameters, as strings
    notes: str = ""  # speaker notes (shown in the presenter view only)

    @property
    def link(self) -> str:
        """The slide's view as a path + query ("/heatmap?layer=2&head=7")."""
        query = urlencode(self.params)
        return f"/{self.page}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class Deck:
    title: str = "Untitled deck"
    slides: tuple[Slide, ...] = ()

    def __len__(self) -> int:
        return len(self.slides)


@dataclass(frozen=True)
class Loaded:
    deck: Deck
    problems: tuple[str, ...] = ()  # one sentence per slide (or part) left out


def slide_from_link(link: str, title: str, notes: str = "") -> Slide:
    """A slide of the view a share link shows ("http://host/heatmap?layer=2" or "/heatmap?layer=2")."""
    parts = urlsplit((link or "").strip())
    page = parts.path.strip("/").split("/")[-1] if parts.path.strip("/") else ""
    return Slide(title=_text(title, "The slide title", MAX_TITLE) or _default_title(page),
                 page=page, params=dict(parse_qsl(parts.query, keep_blank_values=False)),
                 notes=_text(notes, "The speaker notes", MAX_NOTES))


def _default_title(page: str) -> str:
    return page.replace("_", " ").capitalize() if page else "Home"


def _text(value, what: str, limit: int) -> str:
    text = "" if value is None else str(value).strip()
    if len(text) > limit:
        raise BadInput(f"{what} is {len(text):,} characters long; at most {limit:,} fit on a slide.")
    return text


# ---- editing (a deck is immutable: each edit returns a new one) ---------------------------------

def _check_index(deck: Deck, i: int) -> int:
    if not 0 <= int(i) < len(deck.slides):
        raise BadInput(f"There is no slide {int(i) + 1}: the deck has {len(deck.slides)}.")
    return int(i)


def add(deck: Deck, slide: Slide) -> Deck:
    if len(deck.slides) >= MAX_SLIDES:
        raise BadInput(f"A deck holds at most {MAX_SLIDES} slides.")
    return replace(deck, slides=deck.slides + (slide,))


def remove(deck: Deck, i: int) -> Deck:
    i = _check_index(deck, i)
    return replace(deck, slides=deck.slides[:i] + deck.slides[i + 1:])


def move(deck: Deck, i: int, to: int) -> Deck:
    """The slide at position i moved to position `to` (clamped to the deck)."""
    i = _check_index(deck, i)
    slides = list(deck.slides)
    s = slides.pop(i)
    slides.insert(max(0, min(int(to), len(slides))), s)
    return replace(deck, slides=tuple(slides))


def edit(deck: Deck, i: int, *, title: str | None = None, notes: str | None = None) -> Deck:
    i = _check_index(deck, i)
    s = deck.slides[i]
    s = replace(s, title=_text(title, "The slide title", MAX_TITLE) or s.title if title is not None else s.title,
                notes=_text(notes, "The speaker notes", MAX_NOTES) if notes is not None else s.notes)
    return replace(deck, slides=deck.slides[:i] + (s,) + deck.slides[i + 1:])


# ---- the file ---------------------------------------------------------------------------------

def to_json(deck: Deck) -> str:
    return json.dumps({
        "format": FORMAT, "version": VERSION, "title": deck.title,
        "slides": [{"title": s.title, "page": s.page, "params": dict(s.params), "notes": s.notes}
                   for s in deck.slides],
    }, indent=2, ensure_ascii=False) + "\n"


def from_json(data: bytes | str, pages: set[str], models: set[str] | None = None) -> Loaded:
    """Read a deck file. `pages`: the page names that exist ("" for home); `models`: the model keys
    available (None: do not check). Raises BadInput for a file that is not a deck or is too new."""
    if isinstance(data, bytes):
        if len(data) > MAX_BYTES:
            raise BadInput(f"This file is {len(data):,} bytes: a deck is a small JSON file (a few kB), so this is not one.")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("This file is not text, so it is not a deck (a deck is a small JSON file).") from None
    try:
        raw = json.loads(data)
    except ValueError as e:
        raise BadInput(f"This file is not a deck: it is not valid JSON ({e.msg} at line {e.lineno}).") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BadInput(f"This file is not an attnviz deck (it has no \"format\": \"{FORMAT}\").")
    version = raw.get("version")
    if not isinstance(version, int) or version < 1:
        raise BadInput("This deck has no valid version number.")
    if version > VERSION:
        raise BadInput(f"This deck was written by a newer attnviz (deck version {version}); this one reads "
                       f"version {VERSION}. Update attnviz to open it.")
    slides_raw = raw.get("slides")
    if not isinstance(slides_raw, list):
        raise BadInput("This deck has no list of slides.")
    problems, slides = [], []
    for n, s in enumerate(slides_raw[:MAX_SLIDES], start=1):
        if not isinstance(s, dict):
            problems.append(f"Slide {n} is not a slide (an object with a title and a page); left out.")
            continue
        page = str(s.get("page", "")).strip().strip("/")
        title = str(s.get("title") or _default_title(page))[:MAX_TITLE]
        if page not in pages:
            problems.append(f"Slide {n} ({title!r}) shows a page called {page!r}, which this app does not have; left out.")
            continue
        params = s.get("params") or {}
        if not isinstance(params, dict):
            problems.append(f"Slide {n} ({title!r}) has settings that are not a list of name = value; left out.")
            continue
        params = {str(k): str(v) for k, v in params.items()}
        model = params.get("model_choice")
        if models is not None and model and model not in models and model != "other":
            problems.append(f"Slide {n} ({title!r}) uses the model {model!r}, which is not available here; left out.")
            continue
        slides.append(Slide(title=title, page=page, params=params, notes=str(s.get("notes") or "")[:MAX_NOTES]))
    if len(slides_raw) > MAX_SLIDES:
        problems.append(f"The deck has {len(slides_raw)} slides; the first {MAX_SLIDES} were loaded.")
    return Loaded(Deck(title=str(raw.get("title") or "Untitled deck")[:MAX_TITLE], slides=tuple(slides)),
                  tuple(problems))
