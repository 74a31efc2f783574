"""Small display helpers for the positional-encoding page: full-width figures, explanation boxes."""
from __future__ import annotations

import streamlit as st


def show(fig, key: str) -> None:
    """Render a plotly figure full width with a stable key (app-wide exports, presentation sizing)."""
    from attnviz.ui.figure import show_figure

    show_figure(fig, key=key)


def explain(markdown: str) -> None:
    """An explanation beside a view: a few sentences in a bordered box."""
    with st.container(border=True):
        st.markdown(markdown.strip())
