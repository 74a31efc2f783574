"""Lecture decks in the app: the deck being built and its working copy on the server's disk, "Add this
view to the deck" in the sidebar, and presenting.

Each slide is its own view: the view's settings + deck=<id>&slide=<i>, opened as a freshly opened link
would open it. The slide bar's links and keys move between slides inside the browser's session (no page
load), so the keyboard listener lives as long as the presentation and a key pressed while a slide is
still computing is queued, never lost. The deck itself is read from its working copy on every slide, so
a reload, the presenter view in a second tab and a server restart all see the same deck."""
from __future__ import annotations

import html
import threading
import time
import zlib
from collections import OrderedDict
from pathlib import Path

import streamlit as st

from attnviz.decks import deck as dk
from attnviz.decks import store
from attnviz.errors import AttnvizError
from attnviz.types import Request
from attnviz.ui.present import PART_BOX
from attnviz.ui.registry import HOME, PAGES, page as page_spec
from attnviz.ui.share import link_note

DECK = "deck"  # session key: the Deck being built on the Deck page
DECK_ID = "deck_id"  # session key: the id of its working copy on disk
_SEEN = "_deck_seen"  # session key: the working copy's modification time when this session last read or wrote it
_REV = "_deck_rev"  # session key: a counter bumped whenever the deck is replaced (keys of the editors)
_AT = "_deck_at"  # session key: (page, deck id, slide) of the last slide link applied in this session
_SHOWN = "_deck_shown"  # session key: (deck id, slide) last recorded as on screen
_SAVE_ERROR = "_deck_save_error"  # session key: why the working copy could not be written, if it could not
CONTROLS = "deck_controls"  # the slide bar's toggle: show the page's title, explanation and controls
SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "decks"
PAGE_NAMES = {p.name for p in PAGES} | {""}
# the last deck written under each id, for a disk that refuses the write (read-only cache, full disk)
_MEMORY: dict[str, dk.Deck] = {}
_MEMORY_LOCK = threading.Lock()
_MAX_MEMORY = 64


# ---- the deck being built, and its working copy --------------------------------------------------

def _remember(key: str, d: dk.Deck) -> None:
    with _MEMORY_LOCK:
        _MEMORY.pop(key, None)
        _MEMORY[key] = d
        while len(_MEMORY) > _MAX_MEMORY:
            _MEMORY.pop(next(iter(_MEMORY)))


def load_copy(key: str | None) -> dk.Deck | None:
    """The working copy `key` (from disk, else from this server's memory), or None."""
    if not store.valid_id(key):
        return None
    d = store.load(key, PAGE_NAMES)
    if d is None:
        with _MEMORY_LOCK:
            d = _MEMORY.get(key)
    return d


def _adopt(key: str, d: dk.Deck) -> None:
    """Make the working copy `key` this session's deck."""
    st.session_state[DECK] = d
    st.session_state[DECK_ID] = key
    st.session_state[_SEEN] = store.changed(key)
    st.session_state[_REV] = st.session_state.get(_REV, 0) + 1


def deck_id() -> str | None:
    """The id of this session's working copy: the one named in the URL (a slide, or the Deck page's own
    link), else the session's."""
    url = st.query_params.get("deck")
    if store.valid_id(url):
        return url
    key = st.session_state.get(DECK_ID)
    return key if store.valid_id(key) else None


def current() -> dk.Deck:
    """The deck being built: the working copy named by deck_id() (read again when another tab changed
    it), else an empty deck."""
    key = deck_id()
    d = st.session_state.get(DECK)
    if key is None:
        return d if isinstance(d, dk.Deck) else dk.Deck()
    newer = store.changed(key)
    if (key != st.session_state.get(DECK_ID) or not isinstance(d, dk.Deck)
            or (newer is not None and newer != st.session_state.get(_SEEN))):
        copy = load_copy(key)
        if copy is not None:
            _adopt(key, copy)
            return copy
        if key != st.session_state.get(DECK_ID):  # a link to a copy this server no longer has
            return dk.Deck()
    return d if isinstance(d, dk.Deck) else dk.Deck()


def set_current(d: dk.Deck, new_copy: bool = False) -> str:
    """Make `d` the deck being built and write its working copy (a new one with new_copy=True, say for a
    deck just opened from a file). Returns the copy's id."""
    key = None if new_copy else deck_id()
    key = key or store.new_id()
    st.session_state[DECK] = d
    if key != st.session_state.get(DECK_ID):
        st.session_state[DECK_ID] = key
        st.session_state[_REV] = st.session_state.get(_REV, 0) + 1
    if "deck" in st.query_params:  # the Deck page's link names the copy it shows
        st.query_params["deck"] = key
    _remember(key, d)
    try:
        store.save(key, d)
        st.session_state[_SEEN] = store.changed(key)
        st.session_state.pop(_SAVE_ERROR, None)
    except OSError as e:
        st.session_state[_SAVE_ERROR] = (f"The working copy could not be written to {store.folder()} "
                                         f"({e.strerror or e}): the deck is kept in this server's memory "
                                         "only, until it restarts. Save the deck to a file.")
    return key


def version(d: dk.Deck) -> str:
    """A short tag of the deck's content and working copy: it changes with every edit, so the widgets
    that edit the deck (keyed by it) start again from the deck as it is, never replay an old edit."""
    return f"{zlib.crc32(dk.to_json(d).encode()):08x}{st.session_state.get(_REV, 0)}"


def recent_copies() -> None:
    """The other working copies on this server, newest first, each with a link that opens it."""
    copies = [c for c in store.recent(10) if c.deck_id != deck_id()]
    if not copies:
        return
    with st.expander(f"Working copies on this server ({len(copies)})", icon=":material/history:"):
        for c in copies:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.changed))
            st.page_link(page_spec("deck").file, label=f"{c.title} · {plural(c.slides, 'slide')} · changed {when}",
                         query_params={"deck": c.deck_id}, icon=":material/slideshow:")


def where_kept() -> str:
    """One sentence for the Deck page: where the deck is kept and how to get it back."""
    key = deck_id()
    if key is None or load_copy(key) is None:
        return ""
    error = st.session_state.get(_SAVE_ERROR)
    if error:
        return error
    return (f"Kept as a working copy on this server's disk, `{store.path(key)}`, with every change as you make "
            f"it: this page's link (it ends in `?deck={key}`) brings it back after a page reload, in another "
            "browser or after a server restart, and presenting, rehearsing and *End* keep it. "
            "**Save the deck** below for a file of your own.")


def link_problem() -> str | None:
    """A sentence when the URL names a deck this server cannot show, else None."""
    url = st.query_params.get("deck")
    if url is None:
        return None
    if not store.valid_id(url):
        return ("This link's deck id is not one this app writes (8 to 40 letters, digits, '-' or '_'), so it "
                "names no deck: the deck below is the one being built in this tab.")
    if load_copy(url) is None:
        return ("There is no deck under this link on this server: its working copy was removed, or the link "
                "comes from another server. Open a deck file below, or one of this server's working copies.")
    return None


def shipped() -> dict[str, Path]:
    """name -> path of the decks shipped in assets/decks."""
    return {p.stem: p for p in sorted(SHIPPED.glob("*.json"))}


def load_bytes(data: bytes) -> dk.Loaded:
    from attnviz.models.registry import available_models

    return dk.from_json(data, PAGE_NAMES, set(available_models()))


def open_deck(data: bytes) -> dk.Deck | None:
    """Make the deck in `data` the current one (a new working copy) and say what was opened and what was
    left out; None (after a plain warning) when the file is not a deck."""
    try:
        loaded = load_bytes(data)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    set_current(loaded.deck, new_copy=True)
    st.success(f"Opened “{loaded.deck.title}”: {plural(len(loaded.deck), 'slide')}.")
    for p in loaded.problems:
        st.warning(p)
    return loaded.deck


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


# ---- adding the current view (sidebar) ----------------------------------------------------------

def _add_view() -> None:
    """The button's callback: the view as it is when pressed (a part of the page may have changed it since the
    box was drawn)."""
    from attnviz.ui import share

    try:
        slide = dk.slide_from_link(share.view_link(), st.session_state.get("deck_new_title", ""),
                                   st.session_state.get("deck_new_notes", ""))
        set_current(dk.add(current(), slide))
        st.session_state["deck_new_title"] = st.session_state["deck_new_notes"] = ""
        st.session_state["_deck_added"] = f"Added slide {len(current())}: {slide.title}"
    except AttnvizError as e:
        st.session_state["_deck_added"] = str(e)


def add_box() -> None:
    """The sidebar's 'Add this view to the deck' box (above the link box; drawn where ui.page puts it)."""
    if presenting_deck():
        return
    # a constant label: a new one would make a new expander, closed again after each addition
    with st.expander("Add this view to the deck", icon=":material/slideshow:"):
        # typing a title or notes reruns nothing (the page would be drawn again for no change): the button reads
        # them, and a click that blurred a box is not lost to a rerun that moves the sidebar under the pointer
        st.text_input("Slide title", key="deck_new_title", placeholder="the page's name", on_change="ignore")
        st.text_area("Speaker notes", key="deck_new_notes", height=80, on_change="ignore",
                     help="Shown only in the presenter view (a second tab), never on the slide.")
        st.button("Add this view", key="deck_add", on_click=_add_view, icon=":material/add:")
        done = st.session_state.pop("_deck_added", None)
        n = len(current())
        st.caption((done.rstrip(".") + ". " if done else "") + f"The deck has {plural(n, 'slide')}: the "
                   "**Lecture deck** page (Learn) reorders, edits, saves and presents it.")


# ---- presenting ----------------------------------------------------------------------------------

def start(d: dk.Deck) -> str:
    """Present `d`: its working copy (written now) with the lecture's clock started at slide 1; returns
    the copy's id."""
    if not d.slides:
        raise AttnvizError("The deck has no slides: add views to it first.")
    key = set_current(d)
    try:
        store.set_position(key, 0, restart=True)
    except OSError:
        pass  # the presenter view then has no clock; the slides still work from memory
    return key


def live(key: str | None) -> dict | None:
    """{"deck": Deck, "slide": index on screen} of the working copy `key`, or None."""
    d = load_copy(key)
    if d is None:
        return None
    pos = store.position(key) or {"slide": 0}
    return {"deck": d, "slide": max(0, min(len(d.slides) - 1, pos["slide"]))}


def _page_file(s: dk.Slide) -> str:
    return (page_spec(s.page) if s.page else HOME).file


def slide_query(key: str, d: dk.Deck, i: int) -> dict[str, str]:
    """The query of slide i: its view's settings, presentation mode and the deck's place."""
    return {**d.slides[i].params, "present": "1", "deck": key, "slide": str(i)}


def slide_url(key: str, d: dk.Deck, i: int) -> str:
    s = d.slides[i]
    sep = "&" if "?" in s.link else "?"
    return f"{s.link}{sep}present=1&deck={key}&slide={i}"


def slide_link(key: str, d: dk.Deck, i: int, label: str, **kwargs) -> None:
    """A link to slide i that stays inside this browser session (a link opened in a new tab is a full
    link of its own)."""
    st.page_link(_page_file(d.slides[i]), label=label, query_params=slide_query(key, d, i), **kwargs)


def enter(page: str) -> None:
    """Called by app.py before a run's shared keys are read. A slide reached from the slide bar or the
    keyboard (inside the session) opens as its link does in a new tab: the link's settings, the
    defaults for everything else. The way back to the Deck page (deck=<id>&end=1) ends presentation
    mode."""
    key, slide = st.query_params.get("deck"), st.query_params.get("slide")
    if not store.valid_id(key):
        return
    from attnviz.ui import share

    if slide is not None:
        shown = presenting_deck()
        if shown is not None and (shown[1].slides[shown[2]].page or HOME.name) != (page or HOME.name):
            # the slide's number with another page: a click on a control of the slide before, sent after a
            # key press had already asked for this slide (the browser sends both; the later one names the
            # page it was on). The key press wins: open the slide it asked for.
            st.switch_page(_page_file(shown[1].slides[shown[2]]), query_params=slide_query(*shown))
        at = (page, key, slide)
        if st.session_state.get(_AT) != at:
            st.session_state[_AT] = at
            share.open_link(keep=() if "present" in st.query_params else ("present",))
            st.session_state[CONTROLS] = False  # each slide opens on its figure, its switch shown off
        if "present" not in st.session_state and "present" not in st.query_params:
            st.session_state["present"] = True  # a slide whose link's settings were all dropped (a bad value)
    elif st.query_params.get("end") == "1":
        st.session_state[_AT] = None
        st.session_state["present"] = False  # the sidebar's toggle is drawn later in this run
        del st.query_params["end"]  # the page config of this run opens the sidebar again (app.py)


def presenting_deck() -> tuple[str, dk.Deck, int] | None:
    """(id, deck, slide index) when this run shows a slide of a deck."""
    key, raw = st.query_params.get("deck"), st.query_params.get("slide")
    if raw is None:
        return None
    d = load_copy(key)
    if d is None:
        return None
    try:
        i = int(raw)
    except ValueError:
        return None
    if not 0 <= i < len(d.slides):
        return None
    return key, d, i


# Everything on a slide's page above its first figure (title, explanation, tour, controls), folded away
# until the slide bar's toggle shows it: the top-level blocks of the page that hold no figure and come
# before the first one that does, and likewise inside the tabs of that block (the tab bar stays) and inside
# the part of the page (ui.page.part) that holds the first figure. Only on a page that has a figure; the
# slide bar itself stays. The page's document marks those blocks (FOLD_JS, run as the page is built, before
# it is painted) and one plain rule hides them: selectors that find them (`:has()` over the page's blocks) cost
# the browser 200-400 ms of style work on every slide it builds.
FOLD_MARK = "data-attnviz-fold"
FIG = '[data-testid="stPlotlyChart"], .attnviz-plotly'  # Streamlit's charts and those drawn in place
FOLD_JS = """
  const FIG = '%(fig)s', MARK = '%(mark)s';
  let folded = [];
  // the children of a box that come before its first child holding a figure (none when no child holds one)
  const before = (box) => {
    const out = [];
    for (const c of box.children) { if (c.matches(FIG) || c.querySelector(FIG)) return out; out.push(c); }
    return [];
  };
  const fold = () => {
    const bar = document.querySelector('[data-testid="deck-bar"]'), want = new Set();
    const main = document.querySelector('[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"]');
    if (bar && bar.dataset.fold === '1' && main) {
      const top = before(main), first = main.children[top.length];
      for (const c of top) if (!c.matches('.st-key-deck_bar') && !c.querySelector('.st-key-deck_bar')) want.add(c);
      if (first && first.querySelector(FIG)) for (const box of first.querySelectorAll(
          '[data-testid="stTabPanel"] > [data-testid="stVerticalBlock"], .st-key-%(part)s'))
        for (const c of before(box)) want.add(c);
    }
    for (const el of folded) if (!want.has(el)) el.removeAttribute(MARK);
    for (const el of want) if (!el.hasAttribute(MARK)) el.setAttribute(MARK, '');
    folded = [...want];
  };
  // a figure drawing its own pieces changes nothing above it
  const inFigure = (r) => r.target.closest && r.target.closest('.js-plotly-plot');
  new MutationObserver((records) => { if (!records.every(inFigure)) fold(); })
    .observe(document.body, {childList: true, subtree: true, attributes: true, attributeFilter: ['data-fold']});
  fold();
""" % {"fig": FIG, "mark": FOLD_MARK, "part": PART_BOX}
BAR_CSS = """<style>
.st-key-deck_slides { display: none !important; }
/* the bar starts just below the top navigation (79 px high at 1280 x 720) */
[data-testid="stMainBlockContainer"] { padding-top: 88px !important; }
[data-testid="deck-bar"] { font-size: 1.35rem; line-height: 1.3; }
[data-testid="deck-bar"] .deck-count { opacity: .7; font-weight: 600; margin-right: .4rem; }
.st-key-deck_bar { border-bottom: 1px solid rgba(49, 51, 63, .2); padding-bottom: .25rem; }
[%s] { display: none !important; }
</style>""" % FOLD_MARK

# The keyboard: installed once in the page's document, by a script of the page itself (a listener added
# by a script that Streamlit later replaces could stop being called). Right / Page Down: next slide; Left / Page Up: previous; Home:
# slide 1; End: back to the Deck page. A press while a slide is still being opened counts from the
# slide being opened (the queue), so presses are never lost; keys typed into boxes, sliders, lists and
# tabs are left to them.
KEYS_JS = """<script>
(() => {
const w = window.parent, doc = w.document, SLIDE = "%(slide)s";
// a slide opens at its top (the page before it may have been scrolled down)
if (doc.__attnvizDeckSlide !== SLIDE) {
  doc.__attnvizDeckSlide = SLIDE;
  const main = doc.querySelector('[data-testid="stMain"]');
  if (main) main.scrollTo(0, 0);
  w.scrollTo(0, 0);
}
if (!doc.__attnvizDeck) {
  doc.__attnvizDeck = {target: null, start: null, at: 0, tries: 0, deck: null};
  const script = doc.createElement('script');
  script.textContent = `document.addEventListener('keydown', function (e) {
    const S = document.__attnvizDeck;
    const bar = document.querySelector('[data-testid="deck-bar"]');
    if (!bar || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
    const t = e.target, role = (t && t.getAttribute && t.getAttribute('role')) || '';
    if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable
        || (t.tagName === 'INPUT' && !['checkbox', 'button', 'submit'].includes(t.type))
        || /^(slider|combobox|listbox|option|spinbutton|tab|menuitem|radio|textbox|grid|gridcell)$/.test(role))) return;
    const step = {ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1}[e.key];
    if (step === undefined && e.key !== 'Home' && e.key !== 'End') return;
    e.preventDefault(); e.stopPropagation();
    if (e.key === 'End') {
      const a = document.querySelector('.st-key-deck_end a');
      S.target = null;
      if (a) a.click();
      return;
    }
    const n = +bar.dataset.n, shown = +bar.dataset.slide;
    if (S.deck !== bar.dataset.deck) { S.deck = bar.dataset.deck; S.target = null; }
    const from = S.target !== null && S.target !== shown ? S.target : shown;  // a slide still opening counts
    const to = e.key === 'Home' ? 0 : Math.max(0, Math.min(n - 1, from + step));
    if (to === from) return;
    const links = document.querySelectorAll('.st-key-deck_slides a');
    if (!links[to]) return;
    if (S.target === null || S.target === shown) S.start = shown;
    S.target = to; S.at = Date.now(); S.tries = 0;
    links[to].click();
  }, true);
  // A slide asked for by the keyboard that did not open (the browser sent a click on a control of the
  // slide before after it, and that run kept the slide before): ask again, a few times at most.
  setInterval(function () {
    const S = document.__attnvizDeck, bar = document.querySelector('[data-testid="deck-bar"]');
    if (S.target === null) return;
    const app = document.querySelector('[data-testid="stApp"]');
    if (!bar || (app && app.getAttribute('data-test-script-state') === 'running') || Date.now() - S.at < 1500) return;
    const shown = +bar.dataset.slide;
    if (shown !== S.start || S.tries >= 3) { S.target = null; return; }  // arrived, or moved on another way
    const links = document.querySelectorAll('.st-key-deck_slides a');
    if (!links[S.target]) { S.target = null; return; }
    S.tries += 1; S.at = Date.now();
    links[S.target].click();
  }, 400);
  {{FOLD}}`;
  doc.head.appendChild(script);
}
})();
</script>""".replace("{{FOLD}}", FOLD_JS.replace("\\", "\\\\").replace("`", "\\`").replace("%", "%%"))


def slide_bar() -> None:
    """When this run shows a deck's slide: the bar at the top (previous, the slide's number and title,
    next, end, and a toggle for the page's title, explanation and controls), the keyboard, and the
    slide recorded for the presenter view. The page above its first figure is folded away."""
    shown = presenting_deck()
    if shown is None:
        if "slide" in st.query_params and link_problem() and not st.session_state.get("_deck_gone_said"):
            st.session_state["_deck_gone_said"] = True
            link_note(link_problem().split(":")[0] + ": this page opens without its slide bar.")
        return
    key, d, i = shown
    if st.session_state.get(DECK_ID) != key or not isinstance(st.session_state.get(DECK), dk.Deck):
        _adopt(key, d)  # a slide opened from its link: End comes back to this deck
    if st.session_state.get(_SHOWN) != (key, i):
        st.session_state[_SHOWN] = (key, i)
        try:
            store.set_position(key, i)
        except OSError:
            pass
    n = len(d.slides)
    st.markdown(BAR_CSS, unsafe_allow_html=True)
    with st.container(key="deck_bar"):
        prev, title, nxt, end, controls = st.columns([1.2, 6.4, 1.0, 0.8, 2.4], vertical_alignment="center")
        with prev:
            if i > 0:
                slide_link(key, d, i - 1, "◀ Previous")
            else:
                st.markdown('<span style="opacity:.35">◀ Previous</span>', unsafe_allow_html=True)
        fold = "0" if st.session_state.get(CONTROLS) else "1"  # the page above its first figure folded away
        title.markdown(f'<div data-testid="deck-bar" data-slide="{i}" data-n="{n}" data-deck="{html.escape(key)}" '
                       f'data-fold="{fold}">'
                       f'<span class="deck-count">{i + 1} / {n}</span> <b>{html.escape(d.slides[i].title)}</b></div>',
                       unsafe_allow_html=True)
        with nxt:
            if i + 1 < n:
                slide_link(key, d, i + 1, "Next ▶")
            else:
                st.markdown('<span style="opacity:.35">Next ▶</span>', unsafe_allow_html=True)
        with end, st.container(key="deck_end"):
            st.page_link(page_spec("deck").file, label="End", query_params={"deck": key, "end": "1"})
        controls.toggle("Title and controls", key=CONTROLS,
                        help="Shows the page's title, its explanation and its controls above the figure.")
        with st.container(key="deck_slides"):  # one link per slide, for the keyboard
            for k in range(n):
                slide_link(key, d, k, str(k + 1))
            following = slide_charts(d, i + 1) if i + 1 < n else None
            if following:
                from attnviz.ui import plotly_bytes

                if plotly_bytes.available():
                    plotly_bytes.spare(following, key="deck_next_charts")
        st.html(KEYS_JS % {"slide": f"{html.escape(key)}/{i}"}, unsafe_allow_javascript=True)


# The charts each slide's page drew in place on its last whole run (any session), by (digest of the deck's content,
# slide), not by the deck's id: each opening of a deck makes a working copy of its own. The slide before sends them,
# so that the browser draws them out of sight while the lecturer talks, and the slide, when shown, puts them back
# instead of drawing them (ui.plotly_bytes.spare). Shared by the server's sessions; the latest slides, at most
# SLIDE_CHARTS_BYTES of messages.
_SLIDE_CHARTS: OrderedDict = OrderedDict()
_SLIDE_CHARTS_LOCK = threading.Lock()
SLIDE_CHARTS_BYTES = 64_000_000


def _slide_tag(d: dk.Deck, i: int) -> tuple:
    return zlib.crc32(dk.to_json(d).encode()), i


# what a session holds that no link carries: a model trained on the Training page, a generation, uploaded files
PRIVATE_KEYS = ("training_result", "training_contributions", "training_vision", "last_generation")


def holds_private_inputs(state) -> bool:
    """Whether a session's state (a mapping) holds something of its own that a page may show (PRIVATE_KEYS, an
    uploaded file): its slides' charts may then show what the deck's links do not, and are not kept for others."""
    from streamlit.runtime.uploaded_file_manager import UploadedFile

    def uploaded(v) -> bool:
        files = v if isinstance(v, (list, tuple)) else [v]
        return any(isinstance(x, UploadedFile) for x in files)

    return any(state.get(k) is not None for k in PRIVATE_KEYS) or any(uploaded(v) for v in state.values())


def keep_slide_charts() -> None:
    """At the end of a whole run (not a part of the page rerun alone) that showed a deck's slide: keep the charts
    its page drew in place, for the slide before to send (to any session presenting the same deck), unless the
    session holds inputs of its own."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    from attnviz.ui import plotly_bytes

    shown, ctx = presenting_deck(), get_script_run_ctx()
    if shown is None or ctx is None or ctx.fragment_ids_this_run or holds_private_inputs(st.session_state):
        return
    keep_charts(_slide_tag(shown[1], shown[2]), dict(plotly_bytes.drawn_this_run()))


def keep_charts(tag: tuple, charts: dict[str, bytes]) -> None:
    """Keep `charts` (messages by element key) as slide `tag`'s latest (none: forget them), dropping the slides kept
    longest ago while all of them come to more than SLIDE_CHARTS_BYTES (the latest is kept whatever its size)."""
    with _SLIDE_CHARTS_LOCK:
        _SLIDE_CHARTS.pop(tag, None)
        if charts:
            _SLIDE_CHARTS[tag] = charts
        total = sum(len(m) for c in _SLIDE_CHARTS.values() for m in c.values())
        while total > SLIDE_CHARTS_BYTES and len(_SLIDE_CHARTS) > 1:
            total -= sum(len(m) for m in _SLIDE_CHARTS.popitem(last=False)[1].values())  # the oldest


def slide_charts(d: dk.Deck, i: int) -> dict[str, bytes] | None:
    """The charts slide i of the deck drew in place on its last whole run on this server, by element key."""
    with _SLIDE_CHARTS_LOCK:
        return _SLIDE_CHARTS.get(_slide_tag(d, i))


def _clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _restart_clock(key: str) -> None:
    pos = store.position(key) or {"slide": 0}
    store.set_position(key, pos["slide"], restart=True)


@st.fragment(run_every=1.0)
def presenter(key: str) -> None:
    """The presenter view: the lecture's clock, the current slide's title and notes, and the next slide."""
    entry = live(key)
    if entry is None:
        st.info("There is no deck under this link on this server (its working copy was removed).")
        return
    d, i = entry["deck"], entry["slide"]
    pos = store.position(key)
    now = time.time()
    c1, c2, c3 = st.columns(3)
    c1.metric("Elapsed", _clock(now - pos["started"]) if pos else "–", help="Since Start presenting (or the restart below).")
    c2.metric("On this slide", _clock(now - pos["since"]) if pos else "–")
    c3.metric("Slide", f"{i + 1} / {len(d.slides)}")
    s = d.slides[i]
    st.markdown(f"### {i + 1} / {len(d.slides)} · {s.title}")
    st.markdown(s.notes or "*No notes for this slide.*")
    with st.container(border=True, key="deck_next"):
        if i + 1 < len(d.slides):
            nx = d.slides[i + 1]
            view = page_spec(nx.page).title if nx.page else HOME.title
            st.markdown(f"**Next · {i + 2}: {nx.title}**  \n*{view}*")
            st.caption(nx.notes or "No notes for that slide.")
        else:
            st.markdown("**This is the last slide.**")
    st.button("Restart the clock", key="deck_clock_restart", on_click=_restart_clock, args=(key,),
              icon=":material/restart_alt:")


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
            get_result(Request(model, text, pair or None))
        except AttnvizError as e:
            failures.append(f"Slide {i + 1} ({s.title!r}): {e}")
    report(len(d), len(d), "Done")
    return failures
