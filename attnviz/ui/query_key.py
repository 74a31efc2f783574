"""Streamlit helpers for the query · key page: the cached capture and the head/query pickers."""
from __future__ import annotations

import streamlit as st


_SHARED_SEEN = "_qk_shared_seen"  # the shared (layer, head) this page last wrote


def _clamp(value, n: int) -> int:
    try:
        return min(max(int(value), 0), n - 1)
    except (TypeError, ValueError):
        return 0


def head_choice(n_layers: int, n_heads: int) -> tuple[int, int]:
    """Layer and head selectboxes (keys qk_layer / qk_head) that start at the shared head
    (st.session_state["layer"/"head"], set by the heatmap page and others) and write it back.

    A head chosen on another page since this page last ran wins; on the first visit a value
    from the URL (qk_layer / qk_head) wins over the shared default."""
    shared = (st.session_state.get("layer"), st.session_state.get("head"))
    seen = st.session_state.get(_SHARED_SEEN)
    first_visit = seen is None
    for name, n, value in (("qk_layer", n_layers, shared[0]), ("qk_head", n_heads, shared[1])):
        mine = st.session_state.get(name)
        if (first_visit and mine is None) or (not first_visit and shared != seen) or mine not in range(n):
            st.session_state[name] = _clamp(value if value is not None else 0, n)
    c1, c2 = st.columns(2)
    layer = c1.selectbox("Layer", range(n_layers), key="qk_layer", help="0 is the layer nearest the input.")
    head = c2.selectbox("Head", range(n_heads), key="qk_head")
    st.session_state["layer"], st.session_state["head"] = int(layer), int(head)
    st.session_state[_SHARED_SEEN] = (int(layer), int(head))
    return int(layer), int(head)
