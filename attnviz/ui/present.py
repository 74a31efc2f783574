"""Presentation mode: large fonts, larger figures, fewer controls (for a projector at 1280 x 720)."""
from __future__ import annotations

import streamlit as st


def presenting() -> bool:
    return bool(st.session_state.get("present"))


def page_intro(title: str, text: str) -> None:
    """A page's title and opening explanation. In presentation mode the explanation folds into an
    'About this view' expander (the lecturer says it), so the figures start on the first screen."""
    st.title(title)
    if presenting():
        with st.expander("About this view", icon=":material/info:"):
            st.markdown(text)
    else:
        st.markdown(text)


# The key of the container a part of a page (ui.page.part) draws in: a slide folds what comes before its first figure
# inside it, as it does on the page itself (ui.decks.FOLD_JS).
PART_BOX = "page_part"

ROOT_PX = 21  # the page's root font size in presentation mode
STREAMLIT_ROOT_PX = 16  # Streamlit's own


def root_px() -> int:
    """The page's root font size in this run (px): Streamlit's, or presentation mode's larger one."""
    return ROOT_PX if presenting() else STREAMLIT_ROOT_PX


PRESENTATION_CSS = """
<style>
html { font-size: %dpx; }
[data-testid="stMain"] h1 { font-size: 2.4rem; }
[data-testid="stMainBlockContainer"] { padding: 2.5rem 2rem 2rem 2rem; max-width: 100%; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p, .stCaption, .stCaption p, [data-testid="stCaption"] p { color: #2b2b2b !important; }
/* metric values: smaller than Streamlit's 2.25rem at this root size, and wrapped, never cut ("9.66 GFL...") */
[data-testid="stMetricValue"] { font-size: 1.6rem; }
[data-testid="stMetricValue"] > div, [data-testid="stMetricLabel"] p { white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
</style>
""".replace("%dpx", f"{ROOT_PX}px")


def apply_presentation() -> None:
    if presenting():
        st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
