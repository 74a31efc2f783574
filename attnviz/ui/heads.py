"""Layer/head pickers that keep the chosen head in session state across pages."""
from __future__ import annotations

import streamlit as st


def _sync(src: str, dst: str):
    st.session_state[dst] = st.session_state[src]


def clamp_choice(n_layers: int, n_heads: int) -> tuple[int, int]:
    """The shared (layer, head), clamped to this model's range (models differ in size)."""
    layer = min(max(int(st.session_state.get("layer", 0)), 0), n_layers - 1)
    head = min(max(int(st.session_state.get("head", 0)), 0), n_heads - 1)
    st.session_state["layer"], st.session_state["head"] = layer, head
    return layer, head


def head_picker(n_layers: int, n_heads: int, prefix: str, columns=None) -> tuple[int, int]:
    """Two selectboxes (layer, head) bound to the shared st.session_state['layer'/'head']."""
    layer, head = clamp_choice(n_layers, n_heads)
    lk, hk = f"{prefix}_layer", f"{prefix}_head"
    st.session_state[lk], st.session_state[hk] = layer, head
    c1, c2 = columns or st.columns(2)
    with c1:
        st.selectbox("Layer", range(n_layers), key=lk, on_change=_sync, args=(lk, "layer"),
                     help="0 is the layer nearest the input.")
    with c2:
        st.selectbox("Head", range(n_heads), key=hk, on_change=_sync, args=(hk, "head"))
    return st.session_state["layer"], st.session_state["head"]


def open_head(layer: int, head: int, page: str | None = None):
    """Make (layer, head) the chosen head; optionally switch to a page showing it."""
    st.session_state["layer"], st.session_state["head"] = int(layer), int(head)
    if page:
        st.switch_page(page)


def consume_selection(chart_key: str) -> tuple[int, int] | None:
    """The (layer, head) customdata of a NEW click on a plotly chart with on_select, once.

    Streamlit keeps a chart's selection across reruns; this returns it only when it changed,
    so later picker changes are not overridden by an old click."""
    state = st.session_state.get(chart_key)
    points = []
    if state is not None:
        sel = state.get("selection", {}) if hasattr(state, "get") else getattr(state, "selection", {})
        points = sel.get("points", []) if hasattr(sel, "get") else []
    marker = f"_{chart_key}_seen"
    current = tuple(tuple(p.get("customdata") or ()) for p in points)
    if not points or st.session_state.get(marker) == current:
        st.session_state[marker] = current
        return None
    st.session_state[marker] = current
    cd = points[0].get("customdata")
    if not cd or len(cd) < 2:
        return None
    return int(cd[0]), int(cd[1])
