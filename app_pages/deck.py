"""Deck page: build, save, load, prepare and present a lecture made of the app's own views."""
import pandas as pd
import streamlit as st

from attnviz.decks import deck as dk
from attnviz.errors import AttnvizError
from attnviz.ui import decks
from attnviz.ui.page import stop as stop_page
from attnviz.ui.tour import tour

key = st.query_params.get("deck")
if st.query_params.get("presenter") == "1" and key:
    st.title("Presenter view")
    st.caption("This tab follows the presenting tab: the current slide's notes and what comes next.")
    decks.presenter(key)
    stop_page()

st.title("Lecture deck")
st.markdown(
    "A deck is a list of this app's own views, each with a title and speaker notes. On any page, set the "
    "view up and press **Add this view** in the sidebar's *Add this view to the deck* box. Here you reorder, "
    "edit, save and load the deck, **prepare** it before the lecture (every model loaded and every result "
    "computed once, so nothing is slow live) and **present** it: each slide opens in presentation mode, the "
    "right and left arrow keys step through the deck, and a second tab shows your notes.")

tour("deck")

d = decks.current()
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

title = st.text_input("Deck title", value=d.title, key=f"deck_title_{id(d)}")
if title.strip() and title.strip() != d.title:
    d = dk.Deck(title.strip()[:dk.MAX_TITLE], d.slides)
    decks.set_current(d)

if not d.slides:
    st.info("The deck is empty. Add views from any page with the sidebar's *Add this view to the deck* box, "
            "or open a deck above.")
    stop_page()

st.subheader(f"{len(d)} slides")
table = pd.DataFrame({"title": [s.title for s in d.slides], "page": [s.link for s in d.slides],
                      "notes": [s.notes for s in d.slides]})
edited = st.data_editor(table, key=f"deck_editor_{id(d)}", num_rows="dynamic", hide_index=False, width="stretch",
                        column_config={"page": st.column_config.TextColumn("view (link)", disabled=True),
                                       "notes": st.column_config.TextColumn("speaker notes", width="large")})
if len(edited) != len(d.slides) or not edited[["title", "notes"]].equals(table[["title", "notes"]]):
    try:
        kept = [i for i in edited.index if i in table.index]
        new = dk.Deck(d.title, tuple(d.slides[i] for i in kept))
        for pos, i in enumerate(kept):
            new = dk.edit(new, pos, title=str(edited.at[i, "title"] or ""), notes=str(edited.at[i, "notes"] or ""))
        decks.set_current(new)
        st.rerun()
    except AttnvizError as e:
        st.warning(str(e))
c1, c2, c3 = st.columns([2, 2, 1])
src = c1.selectbox("Move slide", range(len(d)), format_func=lambda i: f"{i + 1}: {d.slides[i].title}", key="deck_move_from")
dst = c2.selectbox("to position", range(len(d)), format_func=lambda i: str(i + 1), key="deck_move_to")
if c3.button("Move", key="deck_move"):
    decks.set_current(dk.move(d, src, dst))
    st.rerun()

st.subheader("Before the lecture")
a, b = st.columns(2)
a.download_button("Save the deck (.json)", dk.to_json(d), file_name="attnviz-deck.json", mime="application/json",
                  key="deck_save", on_click="ignore", icon=":material/download:")
if b.button("Prepare deck", key="deck_prepare", icon=":material/playlist_add_check:",
            help="Loads every model and computes every slide's result once, so the lecture runs from the cache."):
    bar = st.progress(0.0, text="Preparing…")
    failures = decks.prepare(d, lambda k, n, msg: bar.progress(k / n, text=msg))
    bar.empty()
    if failures:
        for f in failures:
            st.warning(f)
    else:
        st.success(f"All {len(d)} slides are ready.")

st.subheader("Present")
if st.button("Start presenting", key="deck_present", type="primary", icon=":material/slideshow:"):
    st.session_state["deck_live"] = decks.start(d)
live_key = st.session_state.get("deck_live")
if live_key and decks.live(live_key):
    p1, p2 = st.columns(2)
    p1.markdown(f'<a href="{decks.slide_url(live_key, decks.live(live_key)["deck"], 0)}" target="_self">'
                "▶ Go to slide 1 (in this tab)</a>", unsafe_allow_html=True)
    p2.link_button("Presenter view (open in a second tab)", f"/deck?deck={live_key}&presenter=1")
    st.caption("Open the presenter view first (it follows the slides), then slide 1. Arrow keys step through "
               "the deck; *End* comes back here. Changes to the deck need a new *Start presenting*.")
