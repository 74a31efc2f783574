"""A page run's life-cycle, around app.py's nav.run(): begin (link values, presentation), end and
stop (the URL, the "Link to this view" box and the page's batch export), and the parts of a page that rerun
alone (`part`)."""
from __future__ import annotations

import functools

import streamlit as st

from attnviz.ui import share
from attnviz.ui.copy_link import COPY_JS, copy_link
from attnviz.ui.figure import COUNTER, part_figures, render_batch_export, reset_counter
from attnviz.ui.present import PART_BOX, apply_presentation

# The sidebar's closing boxes are drawn at the end of a run: the deck's "Add this view" into DECK_SLOT, then the batch
# export and "Link to this view" into SLOT (sidebar containers made after the sidebar's controls). A part reserves
# HOLDER in SLOT, so that its own reruns draw those two again in place; the deck's box reads the view when pressed.
# FULL is true from a full run's start until its end.
DECK_SLOT, SLOT, HOLDER, FULL = "_closing_deck", "_closing_slot", "_closing_holder", "_full_run"
PARTS = "_part_counters"  # each part's first automatic figure number in the last full run

# Streamlit fades the elements a run has not yet redrawn (opacity .33 after 0.5 s, over 1 s) by giving each of them
# an opacity transition when the run starts: on every click, every element of the page takes a pending transition,
# and the browser composites and paints them again at the run's start and end, also when the run ends long before
# the fade would begin. Here the fade starts from one class on the document, set when a run has lasted 0.5 s, so a
# quick run leaves the elements' styles alone and a slow one fades them as before.
SLOW_RUN_MS = 500
FADE_SLOW_RUNS = """<style>
[data-stale='true'] { opacity: 1 !important; transition: none !important; }
html.attnviz-slow-run [data-stale='true'] { opacity: .33 !important; transition: opacity 1s ease-in !important; }
</style>
<script>
(() => {
  if (window.__attnvizSlowRuns) return;
  window.__attnvizSlowRuns = true;
  const root = document.documentElement;
  let timer = null;
  // the app's script state, read afresh each time (whichever element carries it now)
  const update = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (app && app.getAttribute('data-test-script-state') === 'running') {
      if (timer === null && !root.classList.contains('attnviz-slow-run')) {
        timer = setTimeout(() => { timer = null; root.classList.add('attnviz-slow-run'); }, %d);
      }
    } else {
      if (timer !== null) { clearTimeout(timer); timer = null; }
      root.classList.remove('attnviz-slow-run');
    }
  };
  new MutationObserver(update).observe(root, {subtree: true, attributes: true,
                                              attributeFilter: ['data-test-script-state']});
  update();
})();
</script>""" % SLOW_RUN_MS


def page_scripts() -> None:
    """The page's own scripts in one hidden block, the first element of every run (each acts once per page load):
    one history entry per page (share.HISTORY_JS), the fade of a slow run's outdated elements (FADE_SLOW_RUNS) and
    the link box's Copy button (COPY_JS)."""
    with st.container(key="page_scripts"):
        st.html("<style>.st-key-page_scripts, [data-testid='stLayoutWrapper']:has(> .st-key-page_scripts) "
                "{ display: none; }</style>" + share.HISTORY_JS + FADE_SLOW_RUNS + COPY_JS,
                unsafe_allow_javascript=True)


def begin(page: str) -> None:
    """Called by app.py before the sidebar: the page's scripts, the shared keys from the link or the last run, a
    fresh figure count, and presentation mode's styles."""
    page_scripts()
    share.start_run(page)
    reset_counter()
    apply_presentation()
    st.session_state[FULL] = True
    st.session_state.pop(HOLDER, None)
    st.session_state.setdefault(PARTS, {})


def reserve_closing() -> None:
    """Called by app.py after the sidebar's controls: where the closing boxes go."""
    st.session_state[DECK_SLOT] = st.sidebar.container()
    st.session_state[SLOT] = st.sidebar.container()


def end() -> None:
    """Called by app.py after every run, also after st.stop(), and by a part after its own reruns: the URL and the
    link box."""
    share.sync_url()
    render_link()
    st.session_state[FULL] = False


def render_link() -> None:
    """The deck's 'Add this view' box (on a full run), the batch export of the page's figures and a 'link to this
    view' box (the code box has a copy button) at the bottom of the sidebar."""
    from attnviz.ui.decks import add_box

    if st.session_state.get(FULL, True):
        with _container(DECK_SLOT):
            add_box()
    holder = st.session_state.get(HOLDER)
    with _container(SLOT) if holder is None else holder:
        render_batch_export()
        with st.expander("Link to this view", icon=":material/link:"):
            copy_link(share.share_link())
            st.caption("Copy it with the button beside it. Opening it restores the model, "
                       "text, page, head and this page's main settings."
                       + (" The text is too long to fit in a link." if len(st.session_state.get("text", "")) > share.MAX_TEXT_IN_URL else ""))


def lazy_tabs(labels, key: str, views, *args) -> None:
    """Tabs of which only the open one runs: views[i](*args) inside tab i when it is open. The open tab is kept under
    `key`, which a page binds to put it into the link; a value that names no tab opens the first."""
    if st.session_state.get(key) not in labels:
        st.session_state[key] = labels[0]
    for tab, view in zip(st.tabs(labels, key=key, on_change="rerun"), views, strict=True):
        if tab.open:
            with tab:
                view(*args)


def _container(key: str):
    """The sidebar container reserved under `key` in this run, or the sidebar itself."""
    found = st.session_state.get(key)
    return st.sidebar if found is None else found


def stop() -> None:
    """st.stop() that first keeps the URL and the 'Link to this view' box current.

    After st.stop() Streamlit drops every later command, app.py's closing sync included."""
    share.stopped_early()
    end()
    st.stop()




def part(body):
    """A part of a page that reruns alone when one of its own widgets changes (st.fragment): the rest of the page
    is neither run nor sent again. Its reruns keep the URL, the link box, the deck's "Add this view" and the batch
    export current, as a full run's end does. Figures inside it need explicit keys (or keep the numbering they had
    in the last full run). One part per page: the closing boxes have one place to be redrawn in."""
    name = f"{body.__module__}.{body.__qualname__}"

    @st.fragment
    @functools.wraps(body)
    def run(*args, **kwargs):
        full = st.session_state.get(FULL, True)
        counters = st.session_state.setdefault(PARTS, {})
        if full:
            counters[name] = st.session_state.get(COUNTER, 0)
        else:  # the automatic figure keys continue from where the part began in the full run
            st.session_state[COUNTER] = counters.get(name, 0)
        slot = st.session_state.get(SLOT)
        if slot is not None:  # written on every run, so that its own reruns may fill it
            with slot:
                st.session_state[HOLDER] = st.container()
        if not full:
            share.start_part()
        with st.container(key=PART_BOX), part_figures(name, full):
            body(*args, **kwargs)
        if not full:
            share.run_completed()
            end()
    return run
