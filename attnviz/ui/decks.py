"""Lecture decks in the app: the deck being built (session), "Add this view to the deck" in the
sidebar, and presenting: each slide is its own link (the view's settings + deck=<id>&slide=<i>), so a
slide opens exactly as its link does; the deck itself lives on the server under its id, which lets a
second tab (the presenter view) follow the first."""
from __future__ import annotations

import html
import secrets
import threading
import time
from pathlib import Path

import streamlit as st
import streamlit.components.v1 as components

from attnviz.decks import deck as dk
from attnviz.errors import AttnvizError
from attnviz.ui.registry import PAGES

DECK = "deck"  # session key: the Deck being built on the Deck page
SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "decks"
PAGE_NAMES = {p.name for p in PAGES} | {""}
# decks being presented: id -> {"deck": Deck, "slide": current index, "at": time of the last change}
_LIVE: dict[str, dict] = {}
_LIVE_LOCK = threading.Lock()
_MAX_LIVE = 64


def current() -> dk.Deck:
    d = st.session_state.get(DECK)
    return d if isinstance(d, dk.Deck) else dk.Deck()


def set_current(d: dk.Deck) -> None:
    st.session_state[DECK] = d


def shipped() -> dict[str, Path]:
    """name -> path of the decks shipped in assets/decks."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.json"))}


def load_bytes(data: bytes) -> dk.Loaded:
    from attnviz.models.registry import available_models

    return dk.from_json(data, PAGE_NAMES, set(available_models()))


def open_deck(data: bytes) -> dk.Deck | None:
    """Make the deck in `data` the current one and say what was opened and what was left out; None
    (after a plain warning) when the file is not a deck."""
    try:
        loaded = load_bytes(data)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    set_current(loaded.deck)
    st.success(f"Opened “{loaded.deck.title}”: {len(loaded.deck)} slides.")
    for p in loaded.problems:
        st.warning(p)
    return loaded.deck


# ---- adding the current view (sidebar) ----------------------------------------------------------

def _add_view(link: str) -> None:
    try:
        slide = dk.slide_from_link(link, st.session_state.get("deck_new_title", ""),
                                   st.session_state.get("deck_new_notes", ""))
        set_current(dk.add(current(), slide))
        st.session_state["deck_new_title"] = st.session_state["deck_new_notes"] = ""
        st.session_state["_deck_added"] = f"Added slide {len(current())}: {slide.title}"
    except AttnvizError as e:
        st.session_state["_deck_added"] = str(e)


def add_box(link: str) -> None:
    """The sidebar's 'Add this view to the deck' box (under the link box)."""
    if presenting_deck():
        return
    # a constant label: a new one would make a new expander, closed again after each addition
    with st.sidebar.expander("Add this view to the deck", icon=":material/slideshow:"):
        st.text_input("Slide title", key="deck_new_title", placeholder="the page's name")
        st.text_area("Speaker notes", key="deck_new_notes", height=80,
                     help="Shown only in the presenter view (a second tab), never on the slide.")
        st.button("Add this view", key="deck_add", on_click=_add_view, args=(link,), icon=":material/add:")
        done = st.session_state.pop("_deck_added", None)
        n = len(current())
        st.caption((done + ". " if done else "") + f"The deck has {n} slide{'s' if n != 1 else ''}: the "
                   "**Lecture deck** page (Learn) reorders, edits, saves and presents it.")


# ---- presenting ----------------------------------------------------------------------------------

def start(d: dk.Deck) -> str:
    """Put `d` on the server for presenting; returns its id."""
    if not d.slides:
        raise AttnvizError("The deck has no slides: add views to it first.")
    key = secrets.token_urlsafe(8)
    with _LIVE_LOCK:
        if len(_LIVE) >= _MAX_LIVE:  # forget the least recently used
            _LIVE.pop(min(_LIVE, key=lambda k: _LIVE[k]["at"]))
        _LIVE[key] = {"deck": d, "slide": 0, "at": time.time()}
    return key


def live(key: str | None) -> dict | None:
    with _LIVE_LOCK:
        return dict(_LIVE[key]) if key in _LIVE else None


def slide_url(key: str, d: dk.Deck, i: int) -> str:
    s = d.slides[i]
    sep = "&" if "?" in s.link else "?"
    return f"{s.link}{sep}present=1&deck={key}&slide={i}"


def presenting_deck() -> tuple[str, dict, int] | None:
    """(id, live entry, slide index) when this run shows a slide of a deck being presented."""
    key, raw = st.query_params.get("deck"), st.query_params.get("slide")
    entry = live(key)
    if entry is None or raw is None:
        return None
    try:
        i = int(raw)
    except ValueError:
        return None
    if not 0 <= i < len(entry["deck"].slides):
        return None
    return key, entry, i


def slide_bar() -> None:
    """When this run shows a deck's slide: the deck's bar (previous, counter, next, end) at the top,
    right/left arrow keys, and the slide index recorded for the presenter view."""
    shown = presenting_deck()
    if shown is None:
        return
    key, entry, i = shown
    d = entry["deck"]
    with _LIVE_LOCK:
        if key in _LIVE:
            _LIVE[key].update(slide=i, at=time.time())
    n = len(d.slides)
    prev_url = slide_url(key, d, i - 1) if i > 0 else ""
    next_url = slide_url(key, d, i + 1) if i + 1 < n else ""
    def anchor(url: str, label: str) -> str:  # same tab (a link button would open a new one)
        return f'<a href="{html.escape(url)}" target="_self">{label}</a>' if url else f'<span style="opacity:.35">{label}</span>'

    st.markdown(f'<div data-testid="deck-bar">{anchor(prev_url, "◀ Previous")} &nbsp;·&nbsp; '
                f'<b>{i + 1} / {n}</b> · {html.escape(d.slides[i].title)} &nbsp;·&nbsp; {anchor(next_url, "Next ▶")}'
                f' &nbsp;·&nbsp; {anchor("/deck", "End")}</div>', unsafe_allow_html=True)
    # right/left arrows anywhere on the page (not while typing in a box). The handler is built in the
    # page's own realm: a component's iframe is sandboxed (it may not navigate the page) and replaced
    # on reruns; the handler clicks the bar's same-tab links.
    components.html("""<script>
const w = window.parent, doc = w.document;
if (doc.__attnvizDeckKeys) doc.removeEventListener('keydown', doc.__attnvizDeckKeys);
doc.__attnvizDeckKeys = new w.Function('e', `
  const t = e.target;
  if (t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
  const want = e.key === 'ArrowRight' ? 'Next' : e.key === 'ArrowLeft' ? 'Previous' : null;
  if (!want) return;
  const a = [...document.querySelectorAll('[data-testid="deck-bar"] a')].find(x => x.textContent.includes(want));
  if (a) { e.preventDefault(); a.click(); }
`);
doc.addEventListener('keydown', doc.__attnvizDeckKeys);
</script>""", height=0)


@st.fragment(run_every=1.0)
def presenter(key: str) -> None:
    """The presenter view: the current slide's title and notes, the next slide, and the time."""
    entry = live(key)
    if entry is None:
        st.info("This deck is no longer being presented (the server was restarted or the deck replaced).")
        return
    d, i = entry["deck"], entry["slide"]
    s = d.slides[i]
    st.markdown(f"### {i + 1} / {len(d.slides)} · {s.title}")
    st.markdown(s.notes or "*No notes for this slide.*")
    if i + 1 < len(d.slides):
        st.caption(f"Next: {d.slides[i + 1].title}")
    else:
        st.caption("This is the last slide.")


def prepare(d: dk.Deck, report) -> list[str]:
    """Load every slide's model and compute its result once (into the app's caches); returns one
    sentence per slide that failed. report(done, total, message)."""
    from attnviz.examples import examples
    from attnviz.models.registry import DEFAULT_MODEL
    from attnviz.ui.cache import get_model, get_result

    failures = []
    for i, s in enumerate(d.slides):
        report(i, len(d), f"Slide {i + 1}: {s.title}")
        model = s.params.get("model_choice", DEFAULT_MODEL)
        if model == "other":
            model = s.params.get("custom_model", "")
        if model == "trained":
            failures.append(f"Slide {i + 1} ({s.title!r}) shows the trained toy model, which lives in one browser "
                            "session only: train it again during the lecture or pick another model.")
            continue
        text = s.params.get("text") or examples()[0][0]
        pair = s.params.get("text_pair") if s.params.get("use_pair") in ("1", "true", "True") else None
        try:
            get_model(model)
            get_result(model, text, pair or None, None)
        except AttnvizError as e:
            failures.append(f"Slide {i + 1} ({s.title!r}): {e}")
    report(len(d), len(d), "Done")
    return failures
