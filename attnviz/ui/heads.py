"""Layer/head pickers that keep the chosen head in session state across pages."""
from __future__ import annotations

import streamlit as st


def _clamp(value, n: int) -> int:
    try:
        return min(max(int(value), 0), n - 1)
    except (TypeError, ValueError):
        return 0


def head_picker(n_layers: int, n_heads: int, prefix: str, columns=None, write_back: bool = True
                ) -> tuple[int, int]:
    """The one layer/head picker: two selectboxes (keys prefix_layer / prefix_head) that start at
    the shared head (st.session_state["layer"/"head"], kept across pages and in the link).

    A head chosen elsewhere since this picker last ran wins; otherwise the picker keeps its own
    value (on a first visit a value from the link, when its keys are bound, wins over the shared
    default). With write_back the choice becomes the shared head. Values outside this model's
    range are clamped."""
    lk, hk, seen_key = f"{prefix}_layer", f"{prefix}_head", f"_{prefix}_shared_seen"
    shared = (st.session_state.get("layer"), st.session_state.get("head"))
    seen = st.session_state.get(seen_key)
    for key, n, value in ((lk, n_layers, shared[0]), (hk, n_heads, shared[1])):
        mine = st.session_state.get(key)
        if (seen is None and mine is None) or (seen is not None and shared != seen) or mine not in range(n):
            st.session_state[key] = _clamp(value if value is not None else 0, n)
    c1, c2 = columns or st.columns(2)
    layer = c1.selectbox("Layer", range(n_layers), key=lk, help="0 is the layer nearest the input.")
    head = c2.selectbox("Head", range(n_heads), key=hk)
    layer, head = int(layer), int(head)
    if write_back:
        st.session_state["layer"], st.session_state["head"] = layer, head
    st.session_state[seen_key] = (st.session_state.get("layer"), st.session_state.get("head"))
    return layer, head


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


def _picked(key: str, widget_key: str, labels: list[str]) -> None:
    st.session_state[key] = labels.index(st.session_state[widget_key])


def token_picker(tokens, key: str, label: str = "Token", default: int = 0, help: str | None = None,
                 container=None) -> int:
    """A select box of token positions shown as "i: token"; returns the chosen position.

    The position lives in st.session_state[key] (an int, in the link); the box itself has the key
    key + "_label". Its options are the labels themselves: with plain positions and a format_func
    the browser kept the old text's label after the text changed. A position that no longer
    exists (a shorter text, a hand-edited link) falls back to `default`."""
    n = len(tokens)
    pos = st.session_state.get(key)
    if isinstance(pos, bool) or not isinstance(pos, int) or not 0 <= pos < n:
        pos = min(max(int(default), 0), n - 1)
    st.session_state[key] = pos
    labels = [f"{i}: {t}" for i, t in enumerate(tokens)]
    widget_key = f"{key}_label"
    st.session_state[widget_key] = labels[pos]
    (container or st).selectbox(label, labels, key=widget_key, on_change=_picked,
                                args=(key, widget_key, labels), help=help)
    return pos
