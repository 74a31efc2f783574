"""Deck page: build, save, load, prepare and present a lecture made of the app's own views."""
import pandas as pd
import streamlit as st

from attnviz.decks import deck as dk
from attnviz.decks import store
from attnviz.errors import AttnvizError
from attnviz.ui import decks
from attnviz.ui.jobs import Bar
from attnviz.ui.page import stop as stop_page
from attnviz.ui.tour import tour

key = st.query_params.get("deck")
if st.query_params.get("presenter") == "1" and key:
    st.title("Presenter view")
    st.caption("This tab follows the presenting tab: the lecture's clock, the current slide's notes and the "
               "next slide.")
    decks.presenter(key)
    stop_page()

st.title("Lecture deck")
st.markdown(
    "A deck is a list of this app's own views, each with a title and speaker notes. On any page, set the "
    "view up and press **Add this view** in the sidebar's *Add this view to the deck* box. Here you reorder, "
    "edit, save and load the deck, **prepare** it before the lecture (every model loaded and every result "
    "computed once, so nothing is slow live) and **present** it: each slide opens in presentation mode on "
    "its figure, the arrow keys step through the deck, and a second tab shows your notes and the time.")

tour("deck")

d = decks.current()
if decks.link_problem():
    st.info(decks.link_problem())
    if not store.valid_id(st.query_params.get("deck")):
        del st.query_params["deck"]
left, right = st.columns(2)
with left:
    up = st.file_uploader("Open a deck file (.json)", type=["json"], key="deck_upload")
    if up is not None and st.session_state.get("_deck_upload_seen") != up.file_id:
        st.session_state["_deck_upload_seen"] = up.file_id
        d = decks.open_deck(up.getvalue()) or d
with right:
    names = list(decks.shipped())
    choice = st.selectbox("Or a deck shipped with the app", names, key="deck_shipped") if names else None
    if choice and st.button("Open this deck", key="deck_open_shipped"):
        d = decks.open_deck(decks.shipped()[choice].read_bytes()) or d

if decks.deck_id():
    st.query_params["deck"] = decks.deck_id()  # this page's link brings the working copy back
rev = decks.version(d)  # the editors below are new widgets whenever the deck changes
title = st.text_input("Deck title", value=d.title, key=f"deck_title_{rev}")
if len(title.strip()) > dk.MAX_TITLE:
    st.caption(f"A deck title keeps its first {dk.MAX_TITLE} characters: the rest of the {len(title.strip()):,} typed "
               "was left out.")
if title.strip() and title.strip()[:dk.MAX_TITLE] != d.title:
    d = dk.Deck(title.strip()[:dk.MAX_TITLE], d.slides)
    decks.set_current(d)
if decks.where_kept():
    st.caption(decks.where_kept())

if not d.slides:
    st.info("The deck is empty. Add views from any page with the sidebar's *Add this view to the deck* box, "
            "or open a deck above.")
    decks.recent_copies()
    stop_page()

st.subheader(decks.plural(len(d), "slide"))
# numbered from 1, as the slides are everywhere else (the slide bar, Move, the presenter view)
table = pd.DataFrame({"title": [s.title for s in d.slides], "page": [s.link for s in d.slides],
                      "notes": [s.notes for s in d.slides]}, index=pd.RangeIndex(1, len(d) + 1, name="slide"))
refused = st.session_state.pop("_deck_refused", None)  # an edit refused last run: the table shows the deck again
if refused:
    st.warning(refused)
# a refused edit makes the table a new one (its count in the key), so that it shows the deck, not the refused text
redraws = st.session_state.get("_deck_editor_redraws", 0)
edited = st.data_editor(table, key=f"deck_editor_{rev}_{redraws}", num_rows="delete", hide_index=False,
                        width="stretch", column_order=("title", "notes", "page"),
                        column_config={"page": st.column_config.TextColumn("view (link)", disabled=True, width="medium"),
                                       "notes": st.column_config.TextColumn("speaker notes", width="large")})
if len(edited) != len(d.slides) or not edited[["title", "notes"]].equals(table[["title", "notes"]]):
    try:
        kept = [i for i in edited.index if i in table.index]
        new = dk.Deck(d.title, tuple(d.slides[i - 1] for i in kept))
        for pos, i in enumerate(kept):
            new = dk.edit(new, pos, title=str(edited.at[i, "title"] or ""), notes=str(edited.at[i, "notes"] or ""))
        decks.set_current(new)
    except AttnvizError as e:
        st.session_state["_deck_refused"] = f"{e} The slide keeps what it had."
        st.session_state["_deck_editor_redraws"] = redraws + 1
    st.rerun()


def _move(src_key: str) -> None:
    """Move a slide; the Move box then shows the moved slide at its new place."""
    src, dst = st.session_state[src_key], st.session_state["deck_move_to"]
    decks.set_current(dk.move(decks.current(), src, dst))
    st.session_state["_deck_moved_to"] = dst


moved_to = st.session_state.pop("_deck_moved_to", None)
c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
# keyed by the deck's content: after a move or an edit it is a new box, labelled from the deck as it is now
move_key = f"deck_move_from_{rev}"
c1.selectbox("Move slide", range(len(d)), format_func=lambda i: f"{i + 1}: {d.slides[i].title}", key=move_key,
             index=moved_to if moved_to is not None and moved_to < len(d) else 0)
c2.selectbox("to position", range(len(d)), format_func=lambda i: str(i + 1), key="deck_move_to")
c3.button("Move", key="deck_move", on_click=_move, args=(move_key,))

st.subheader("Before the lecture")
a, b = st.columns(2)
a.download_button("Save the deck (.json)", dk.to_json(d), file_name="attnviz-deck.json", mime="application/json",
                  key="deck_save", on_click="ignore", icon=":material/download:")
if b.button("Prepare deck", key="deck_prepare", icon=":material/playlist_add_check:",
            help="Loads every model and computes every slide's result once, so the lecture runs from the cache."):
    with Bar("Preparing…") as bar:
        failures = decks.prepare(d, bar)
    if failures:
        for f in failures:
            st.warning(f)
    else:
        st.success(f"All {decks.plural(len(d), 'slide')} are ready." if len(d) != 1 else "The slide is ready.")

st.subheader("Present")
if st.button("Start presenting", key="deck_present", type="primary", icon=":material/slideshow:",
             help="Starts the lecture's clock at slide 1."):
    st.session_state["deck_live"] = decks.start(d)
live_key = st.session_state.get("deck_live")
if live_key and live_key == decks.deck_id() and decks.live(live_key):
    p1, p2 = st.columns(2)
    with p1:
        decks.slide_link(live_key, decks.live(live_key)["deck"], 0, "▶ Go to slide 1 (in this tab)")
    p2.link_button("Presenter view (open in a second tab)", f"/deck?deck={live_key}&presenter=1")
    st.caption("Open the presenter view first (it follows the slides and keeps the time), then slide 1. "
               "The right and left arrow keys (a clicker's Page Down and Page Up) step through the deck, Home "
               "goes to slide 1, and the End key or *End* comes back here. Each slide opens on its figure: "
               "its bar's *Title and controls* shows the rest of the page. Edits made here while presenting "
               "show on the next slide opened.")
decks.recent_copies()
