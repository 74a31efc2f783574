"""The sidebar's "Word level" switch: the heatmap, entropy, rollout and head-role pages merge word pieces
into words (attnviz/words: attention to a word summed over its pieces, from a word averaged)."""
from __future__ import annotations

import streamlit as st

from attnviz.types import AttentionResult, Request
from attnviz.ui.share import current_page
from attnviz.units import count_text

WORDS = "words"  # session key of the sidebar toggle (shared in the URL)
WORD_PAGES = ("heatmap", "entropy", "rollout", "head_roles")  # the pages that read the switch
PAGES_WITH_WORDS = "the heatmap, entropy, rollout and head-role pages"


_QUEUED = "_queued_words"


def queue(value: bool) -> None:
    """Set the switch from the next run on (a page cannot change a sidebar widget drawn before it)."""
    st.session_state[_QUEUED] = bool(value)


def control() -> None:
    if _QUEUED in st.session_state:
        st.session_state[WORDS] = st.session_state.pop(_QUEUED)
    st.session_state.setdefault(WORDS, False)
    used = current_page() in WORD_PAGES
    st.toggle("Word level", key=WORDS, disabled=not used,
              help=("" if used else "Not used on this page. ")
              + "Merge word pieces into words (Clark et al. 2019): attention to a word is the sum over its "
                "pieces, attention from a word the mean of its pieces' rows, so every row still sums to 1. "
                f"Applies to {PAGES_WITH_WORDS}.")


def on() -> bool:
    return bool(st.session_state.get(WORDS, False))


def apply(result: AttentionResult, request: Request | None) -> AttentionResult:
    """`result` (of `request`; None: the trained toy model's stored frame) at word level when the switch is on,
    with one line saying what was merged."""
    if not on():
        return result
    from attnviz.words.merge import merge_words

    if request is None:
        merged = merge_words(result)
    else:
        from attnviz.ui.cache import word_level

        merged = word_level(result, request, result.quantity)
    if merged is result:
        st.caption("**Word level:** every token here is a whole word already; nothing to merge.")
    else:
        st.caption(f"**Word level:** {count_text(result.seq_len)} tokens merged into {count_text(merged.seq_len)} words. Attention *to* a "
                   "word is the sum over its pieces, attention *from* a word the mean of its pieces' rows, so every "
                   "row still sums to 1.")
    return merged


def pieces_only_note() -> None:
    """For pages that always show word pieces, when the switch is on."""
    if on():
        st.caption(f"This page shows word pieces: the sidebar's **Word level** applies to {PAGES_WITH_WORDS}.")
