"""A page run's life-cycle, around app.py's nav.run(): begin (link values, presentation), end and
stop (the URL, the "Link to this view" box and the page's batch export)."""
from __future__ import annotations

import streamlit as st

from attnviz.ui import share
from attnviz.ui.figure import render_batch_export, reset_counter
from attnviz.ui.present import apply_presentation


def begin(page: str) -> None:
    """Called by app.py before the sidebar: the shared keys from the link or the last run, a fresh
    figure count, and presentation mode's styles."""
    share.start_run(page)
    reset_counter()
    apply_presentation()


def end() -> None:
    """Called by app.py after every run, also after st.stop(): the URL and the link box."""
    share.sync_url()
    render_link()


def render_link() -> None:
    """A 'link to this view' box at the bottom of the sidebar (the code box has a copy button),
    and the batch export of the page's figures."""
    render_batch_export()
    from attnviz.ui.decks import add_box

    add_box(share.view_link())
    with st.sidebar:
        with st.expander("Link to this view", icon=":material/link:"):
            st.code(share.share_link(), language=None, wrap_lines=True)
            st.caption("Copy it with the button at the box's top right. Opening it restores the model, "
                       "text, page, head and this page's main settings."
                       + (" The text is too long to fit in a link." if len(st.session_state.get("text", "")) > share.MAX_TEXT_IN_URL else ""))


def stop() -> None:
    """st.stop() that first keeps the URL and the 'Link to this view' box current.

    After st.stop() Streamlit drops every later command, app.py's closing sync included."""
    share.stopped_early()
    end()
    st.stop()


