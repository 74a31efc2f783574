"""Shared widgets of the attention lab pages: matrix editors, labelled matrices, lecture navigation."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attnviz.errors import BadInput
from attnviz.lab.matrix_text import format_matrix, parse_matrix
from attnviz.ui.choices import keep_choice  # noqa: F401  the labs call it from here
from attnviz.ui.registry import lecture_order


def lab_header(page_file: str, intro: str) -> None:
    """Title with the lecture number, and the page's few-sentence explanation (folded into 'About this view' in
    presentation mode, so a slide at 1280 x 720 shows its controls and figures on the first screen)."""
    from attnviz.ui.present import page_intro
    from attnviz.ui.tour import tour

    page_intro(_spec(page_file).heading or _spec(page_file).title, intro)
    tour(_spec(page_file).name)


def _spec(page_file: str):
    return next(p for p in lecture_order() if p.file == page_file)


def lecture_nav(page_file: str) -> None:
    """'Previous' and 'Next' links in lecture order, at the bottom of a lab page."""
    order = lecture_order()
    i = order.index(_spec(page_file))
    st.divider()
    left, right = st.columns(2)
    if i > 0:
        prev = order[i - 1]
        left.page_link(prev.file, label=f"← {prev.heading or prev.title}")
    if i + 1 < len(order):
        nxt = order[i + 1]
        right.page_link(nxt.file, label=f"Next: {nxt.heading or nxt.title} →")


def _kept(key: str) -> str:
    return f"_{key}_kept"  # the page's prefix first, like every key


def matrix_editor(label: str, default: np.ndarray, key: str, help: str | None = None,
                  height: int | None = None) -> tuple[np.ndarray | None, str | None]:
    """A text area holding a matrix (one row per line): (parsed matrix, None), or (None, the plain
    message) for non-numeric, ragged or empty input; the caller decides where the message goes.

    The typed text is also kept under a key of its own: Streamlit forgets a widget's value after a
    run that did not draw it (a page stopped early by a bad setting), and the user's matrix must
    survive that."""
    if key not in st.session_state:
        st.session_state[key] = st.session_state.get(_kept(key), format_matrix(default))
    st.session_state[_kept(key)] = st.session_state[key]
    n_lines = max(2, st.session_state[key].count("\n") + 1)

    def _keep():
        st.session_state[_kept(key)] = st.session_state[key]

    st.text_area(label, key=key, height=height or min(260, 40 + 26 * n_lines), on_change=_keep,
                 help=help or "One row per line; numbers separated by spaces or commas.")
    try:
        return parse_matrix(st.session_state[key], label.split(" ")[0]), None
    except BadInput as e:
        return None, str(e)


def matrix_input(label: str, default: np.ndarray, key: str, help: str | None = None,
                 height: int | None = None) -> np.ndarray | None:
    """A text area holding a matrix (one row per line). Returns the parsed matrix, or None
    after showing a plain warning (under the text area) for non-numeric, ragged or empty input."""
    m, error = matrix_editor(label, default, key, help=help, height=height)
    if error:
        st.warning(error)
    return m


def reset_button(keys: list[str], label: str = "Reset to the example", key: str | None = None) -> None:
    """A button that forgets the given widget values so their defaults return."""
    def _reset():
        for k in keys:
            st.session_state.pop(k, None)
            st.session_state.pop(_kept(k), None)

    st.button(label, on_click=_reset, key=key)


def int_list_input(label: str, default: str, key: str, help: str | None = None) -> list[int] | None:
    """A text input of comma-separated whole numbers; None after a plain warning."""
    st.session_state.setdefault(key, default)
    st.text_input(label, key=key, help=help)
    parts = [p.strip() for p in st.session_state[key].replace(";", ",").split(",") if p.strip()]
    if not parts:
        st.warning(f"{label}: type at least one whole number.")
        return None
    out = []
    for p in parts:
        try:
            out.append(int(p))
        except ValueError:
            st.warning(f"{label}: '{p}' is not a whole number.")
            return None
    return out


# --- keeping values restored from a link valid (before the widget is drawn) ---------------------
# Streamlit 1.67 silently replaces a session-state value that a widget cannot show by its first
# option / its minimum; these put a hand-edited link's bad value back to the page default instead.

def keep_in_range(key: str, lo, hi, default) -> None:
    """Session value of a number widget: default if missing, clamped into [lo, hi]."""
    value = st.session_state.setdefault(key, default)
    clamped = min(max(value, lo), hi)
    if clamped != value:
        st.session_state[key] = clamped


def keep_text(key: str, default: str, max_chars: int | None = None) -> None:
    """Session value of a text widget: default if missing, cut to max_chars."""
    value = st.session_state.setdefault(key, default)
    if max_chars is not None and len(value) > max_chars:
        st.session_state[key] = value[:max_chars]


def stop_page(page_file: str) -> None:
    """Stop a lab page after a plain message, keeping the lecture links, the URL and the share link.

    After st.stop() Streamlit drops every later command, including app.py's closing URL sync and
    'Link to this view' box, so they are done here first. A lab's lecture links end its part (ui.page.part), so
    they are drawn here in a full run and in the part's own reruns alike."""
    from attnviz.ui import page

    lecture_nav(page_file)
    page.stop()
