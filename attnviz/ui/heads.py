"""Layer/head pickers that keep the chosen head in session state across pages."""
from __future__ import annotations

import streamlit as st

from attnviz.ui.figure import clicked_key


def _clamp(value, n: int) -> int:
    try:
        return min(max(int(value), 0), n - 1)
    except (TypeError, ValueError):
        return 0


SUMMED = "all, summed"  # what the head box shows when the view sums the heads (ALTI)


def head_picker(n_layers: int, n_heads: int, prefix: str, columns=None, write_back: bool = True,
                heads_summed: bool = False) -> tuple[int, int]:
    """The one layer/head picker: two selectboxes (keys prefix_layer / prefix_head) that start at
    the shared head (st.session_state["layer"/"head"], kept across pages and in the link).

    The picker always shows the head it returns. It shows the head wanted (with write_back the shared
    head, else its own, which follows the shared head when that changes elsewhere), brought into this
    model's range; only a choice made in the picker changes the wanted head, so a model with fewer
    heads, or a view that sums the heads (heads_summed: the head box says so and cannot be changed),
    shows the nearest head without forgetting the one chosen. On a first visit a value from the link,
    when its keys are bound, is such a choice. Returns (layer, head); head is 0 when heads_summed."""
    from attnviz.ui.share import hold

    lk, hk = f"{prefix}_layer", f"{prefix}_head"
    seen_key, shown_key, own_key = f"_{prefix}_shared_seen", f"_{prefix}_shown", f"_{prefix}_wanted"
    hold(lk, hk)
    shared = (st.session_state.get("layer"), st.session_state.get("head"))
    seen, shown, own = (st.session_state.get(k) for k in (seen_key, shown_key, own_key))
    if write_back:
        wanted = list(shared)
    else:  # its own head, which follows the shared head when that changed since the picker last ran
        wanted = list(own if own is not None and (seen is None or shared == seen) else shared)
    counts = (n_layers, 1 if heads_summed else n_heads)
    picked = [False, False]
    for i, key in enumerate((lk, hk)):
        mine = st.session_state.get(key)
        if isinstance(mine, bool) or not isinstance(mine, int):
            continue
        # a choice: the box's value differs from what the picker last showed (or, first time, a link's value)
        if (mine != shown[i] if shown is not None else seen is None) and not (i == 1 and heads_summed):
            wanted[i], picked[i] = mine, True
    values = [_clamp(w if w is not None else 0, n) for w, n in zip(wanted, counts)]
    for key, value in zip((lk, hk), values):
        if st.session_state.get(key) != value and not (key == hk and heads_summed):
            st.session_state[key] = value
    c1, c2 = columns or st.columns(2)
    layer = int(c1.selectbox("Layer", range(n_layers), key=lk, help="0 is the layer nearest the input."))
    if heads_summed:
        c2.selectbox("Head", [SUMMED], key=f"{hk}_summed", disabled=True,
                     help="This view sums the heads of each layer; the head chosen elsewhere is kept for the "
                          "other views.")
        head = 0
    else:
        head = int(c2.selectbox("Head", range(n_heads), key=hk))
    for i, value in enumerate((layer, values[1] if heads_summed else head)):
        if picked[i] or wanted[i] is None:
            wanted[i] = value
    if write_back:
        st.session_state["layer"], st.session_state["head"] = (int(w) for w in wanted)
    else:
        st.session_state[own_key] = tuple(int(w) for w in wanted)
    st.session_state[seen_key] = (st.session_state.get("layer"), st.session_state.get("head"))
    # the head box is not drawn while the heads are summed: its last shown value stands
    st.session_state[shown_key] = (layer, shown[1] if heads_summed and shown is not None else head)
    return layer, head


def _customdata(point) -> list:
    """A selected point's customdata as a list (a typed array arrives as {"0": layer, "1": head})."""
    data = point.get("customdata") if hasattr(point, "get") else None
    if isinstance(data, dict):
        data = [data[k] for k in sorted(data, key=int)]
    return list(data) if data is not None else []


def clicked_head(chart_key: str) -> tuple[int, int] | None:
    """The one click parser: the (layer, head) customdata of a NEW click on the chart drawn with
    show_figure(..., key=chart_key, on_select="rerun"), once; None otherwise. Call it before or after the chart.

    Streamlit keeps a chart's selection across reruns; this returns it only when it changed, so later
    picker changes are not overridden by an old click (and a chart drawn again without a selection, after
    the visitor comes back to the page, takes a click on the same head again). A figure drawn in place
    (show_figure(..., in_place=True)) reports each click once, on the run it starts."""
    hit = st.session_state.pop(clicked_key(chart_key), None)
    if hit is not None and len(hit) >= 2:
        return int(hit[0]), int(hit[1])
    state = st.session_state.get(chart_key)
    points = []
    if state is not None:
        sel = state.get("selection", {}) if hasattr(state, "get") else getattr(state, "selection", {})
        points = sel.get("points", []) if hasattr(sel, "get") else []
    data = [_customdata(p) for p in points]
    marker = f"_{chart_key}_seen"
    current = tuple(tuple(d) for d in data)
    seen = st.session_state.get(marker)
    st.session_state[marker] = current
    if not points or seen == current:
        return None
    hit = next((d for d in data if len(d) >= 2), None)
    return (int(hit[0]), int(hit[1])) if hit is not None else None


def _picked(key: str, widget_key: str, labels: list[str], positions: list[int]) -> None:
    st.session_state[key] = positions[labels.index(st.session_state[widget_key])]


def token_picker(tokens, key: str, label: str = "Token", default: int = 0, help: str | None = None,
                 container=None, positions=None) -> int:
    """A select box of token positions shown as "i: token"; returns the chosen position.

    The position lives in st.session_state[key] (an int, in the link); the box itself has the key
    key + "_label" and is set from the position on every run, so it always shows the position used.
    Its options are the labels themselves: with plain positions and a format_func the browser kept
    the old text's label after the text changed. `positions` limits the choice (say, to the tokens
    shown when special tokens are hidden). A position that is not offered (a shorter text, a
    hand-edited link, a hidden token) falls back to `default`, or the first position offered."""
    n = len(tokens)
    offered = list(range(n)) if positions is None else [int(p) for p in positions]
    pos = st.session_state.get(key)
    if isinstance(pos, bool) or not isinstance(pos, int) or pos not in offered:
        pos = min(max(int(default), 0), n - 1)
        if pos not in offered:
            pos = next((p for p in offered if p >= pos), offered[0])
    st.session_state[key] = pos
    labels = [f"{i}: {tokens[i]}" for i in offered]
    widget_key = f"{key}_label"
    st.session_state[widget_key] = labels[offered.index(pos)]
    (container or st).selectbox(label, labels, key=widget_key, on_change=_picked,
                                args=(key, widget_key, labels, offered), help=help)
    return pos
