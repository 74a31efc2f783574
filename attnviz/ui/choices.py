"""Select boxes whose option labels may change while the choice stays: a token's label after the text changed, a
head's slope after the head count changed, a slide's title after an edit. The browser keeps showing the label it
drew for the chosen option until it is told the value again, so the box's value is given again, before the box is
drawn, whenever its labels differ from the last run's."""
from __future__ import annotations

import streamlit as st

_LABELS = "_choices_labels"  # widget key -> the option labels the box was last drawn with


def selectbox(where, label: str, options, *, key: str, format_func=str, **kwargs):
    """`where.selectbox(label, options, key=key, format_func=format_func, ...)` that shows the label of the chosen
    option as it is now."""
    options = list(options)
    labels = tuple(str(format_func(o)) for o in options)
    drawn = st.session_state.setdefault(_LABELS, {})
    if drawn.get(key, labels) != labels and st.session_state.get(key) in options:
        st.session_state[key] = st.session_state[key]  # sent to the browser again, with its label as it is now
    drawn[key] = labels
    return where.selectbox(label, options, key=key, format_func=format_func, **kwargs)


def keep_choice(key: str, options, default) -> None:
    """Session value of a choice widget (radio, selectbox, select_slider): default unless in options (a value from
    a hand-edited link, or left by options that changed)."""
    options = list(options)
    if st.session_state.get(key, default) not in options:
        st.session_state[key] = default if default in options else options[0]
    st.session_state.setdefault(key, default)
