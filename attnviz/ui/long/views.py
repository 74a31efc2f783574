"""Long inputs, the views over a recording: the pooled all-heads grid grouped by key/value head (a click opens a
head), one head pooled with an exact zoom, token focus over the whole text, top-k lines, distance profiles, sink
mass and the sliding-window pattern."""
from __future__ import annotations

import html

import numpy as np
import streamlit as st

from attnviz.long import figures as lf
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import clicked_head
from attnviz.ui.numbers import number_box
from attnviz.ui.long.recording import Recording
from attnviz.units import count_text

MAX_ZOOM = 256  # largest zoom window (positions per side)
OVERVIEW_TILES = 128  # tiles per side of one head's pooled overview


def gqa_note(la) -> str:
    if la.group == 1:
        return f"Each of the {la.n_heads} heads has its own keys (no grouped-query attention)."
    groups = "; ".join(f"heads h{k * la.group}–h{(k + 1) * la.group - 1} share key head {k}"
                       for k in range(la.n_kv_heads))
    return (f"Grouped-query attention: {la.n_heads} query heads read {la.n_kv_heads} key/value heads ({groups}); "
            "the keys of a group are stored once.")


def grid(rec: Recording, how: str, selected) -> None:
    """The pooled grid of every head; a click on a head opens it in the one-head views (the page's head picker,
    lg_layer / lg_head, drawn after the grid)."""
    la, s = rec.la, rec.s
    tiles = s.pooled.tiles(how)
    e = s.pooled.edges
    fig = lf.pooled_grid_figure(tiles, e, la.group, how, selected=selected)
    show_figure(fig, key="lg_grid", on_select="rerun", selection_mode="points", name="long-grid")
    hit = clicked_head("lg_grid")
    if hit:
        st.session_state["lg_layer"], st.session_state["lg_head"] = hit
        st.rerun()
    size = int(np.diff(e).max())
    st.caption(f"Each cell is the **{how}** of a block of about {size}×{size} weights ({len(e) - 1}×{len(e) - 1} "
               f"tiles per head; tile sizes differ by at most one). {gqa_note(la)} Colours saturate at the 99th "
               "percentile of the tiles; hover a tile for its query and key positions and exact pooled value. "
               "Click a head's centre (where the hover names the head) to open it below.")


def zoom_controls(n: int):
    """(q0, k0, size) of the zoom window from three number inputs, clamped to the input."""
    c = st.columns(3)
    size = int(number_box(c[2], "Window size", min(8, n), min(MAX_ZOOM, n), min(64, n), step=8, key="lg_zsize",
                          help=f"Positions per side, at most {MAX_ZOOM}: the window is computed exactly."))
    last = n - size  # the last start that keeps the whole window inside the input
    q0 = int(number_box(c[0], "Query start", 0, last, max(0, min(last, n // 2)), key="lg_zq",
                        help=f"First query row of the window: 0 to {last:,}, so that the window fits in the input."))
    k0 = int(number_box(c[1], "Key start", 0, last, max(0, min(last, n // 2 - size // 2)), key="lg_zk",
                        help=f"First key column of the window: 0 to {last:,} (keys after the query are 0 for a causal "
                             "model)."))
    return q0, k0, size


def head_view(rec: Recording, layer: int, head: int, how: str) -> None:
    from attnviz.ui.cache import long_head_overview

    la = rec.la
    n = la.seq_len
    q0, k0, size = zoom_controls(n)
    tiles, edges = long_head_overview(rec.id, la, layer, head, OVERVIEW_TILES, how)
    left, right = st.columns([2, 3])  # the zoom's token labels need the room
    with left:
        show_figure(lf.head_overview_figure(tiles, edges, f"L{layer} H{head} (key head {la.kv_head(head)}), pooled",
                                            how, box=(q0, q0 + size, k0, k0 + size)), key="lg_overview")
        st.caption(f"The whole {n:,} × {n:,} map, each cell the {how} of a block of about "
                   f"{int(np.diff(edges).max())}² weights (computed on demand from the recorded q and k). The red box "
                   "is the zoom window.")
    with right:
        w = la.window(layer, head, q0, q0 + size, k0, k0 + size)
        show_figure(lf.zoom_figure(w, q0, k0, la.tokens, f"Zoom: queries {q0}–{q0 + size - 1}, keys {k0}–{k0 + size - 1}"),
                    key="lg_zoom")
        st.caption("Exact weights at full resolution: each row's softmax runs over every key the query may see, "
                   "then the window is cut out, so a row inside the window need not sum to 1. Hover for positions, "
                   "tokens and the weight.")


FOCUS_BEFORE, FOCUS_AFTER = 120, 180  # tokens shown around the query, so it is on the box's first screen


def focus_html(row: np.ndarray, la, q: int, lo: int = 0, hi: int | None = None) -> str:
    """The text of positions lo..hi-1 shaded by `row` (the query's weights over every key), in a scrolling box;
    a line before and after says how many tokens and how much weight lie outside."""
    from attnviz.heatmap.text_view import shaded_text_html

    tokens = la.tokens
    hi = len(tokens) if hi is None else hi
    cont = la.continuation if la.continuation is not None else np.array([t.startswith("##") for t in tokens])
    inner = shaded_text_html(tokens[lo:hi], row[lo:hi], focus=q - lo, continuation=cont[lo:hi],
                             special=la.special_mask[lo:hi])
    edge = '<div style="color: #666; font-size: 0.85em; margin: 0.3em 0">{}</div>'
    before = edge.format(f"… {lo:,} earlier tokens (weight {row[:lo].sum():.3f} in all) …") if lo else ""
    after = edge.format(f"… {len(tokens) - hi:,} later tokens (weight {row[hi:].sum():.3f}) …") if hi < len(tokens) else ""
    return (f'<div style="max-height: 360px; overflow-y: auto; border: 1px solid #ddd; padding: 0.5em">'
            f'{before}{inner}{after}</div>')


def token_focus(rec: Recording, layer: int, head: int) -> None:
    la = rec.la
    n = la.seq_len
    q = int(number_box(st, "Query position", 0, n - 1, n - 1, key="lg_fq",
                       help="The token whose attention row is shaded over the whole text."))
    row = la.rows(layer, head, q, q + 1)[0]
    top = np.argsort(row)[::-1][:5]
    st.markdown(f"Query **{q}** ({html.escape(la.tokens[q])!s}) in L{layer} H{head}: heaviest keys "
                + ", ".join(f"{int(k)} *{html.escape(la.tokens[int(k)])}* ({row[k]:.3f})" for k in top) + ".")
    lo, hi = max(0, q - FOCUS_BEFORE), min(n, q + FOCUS_AFTER)
    st.html(focus_html(row, la, q, lo, hi))
    st.caption(f"The text shaded by the query's weights over all its keys (strongest = full colour): positions "
               f"{lo:,}–{hi - 1:,} around the query (outlined in red); hover a token for its position and exact "
               "weight.")
    if (lo, hi) != (0, n):
        with st.expander(f"The whole text ({n:,} tokens), shaded the same way"):
            st.html(focus_html(row, la, q))


def top_k_view(rec: Recording, layer: int, head: int) -> None:
    la = rec.la
    n = la.seq_len
    c = st.columns(3)
    k = int(number_box(c[0], "Keys per query (k)", 1, 16, 3, key="lg_k"))
    span = int(number_box(c[1], "Queries shown", 1, 256, min(64, n), key="lg_kspan"))
    q0 = int(number_box(c[2], "From query", 0, n - 1, max(0, n - span), key="lg_kq"))
    q1 = min(n, q0 + span)
    keys, weights = la.top_k(layer, head, q0, q1, k)
    show_figure(lf.top_k_figure(keys, weights, q0, la.tokens, f"Top-{count_text(k)} keys of queries {q0}–{q1 - 1}, L{layer} H{head}"),
                key="lg_topk")
    st.caption("Each query row draws a line to its k heaviest keys only (sparse: nothing else is sent); "
               "a marker's colour and size is the exact weight. Vertical streaks at the left are sinks; a diagonal "
               "just left of the queries is local attention; lines to a far earlier copy of a passage are "
               "induction or copying.")


def profiles(rec: Recording, layer: int) -> None:
    s, la = rec.s, rec.la
    edges, per_head, per_layer = s.profile(n_bins=24, log=True)
    c1, c2 = st.columns(2)
    with c1:
        show_figure(lf.distance_profile_figure(edges, per_head[layer], [f"h{h}" for h in range(la.n_heads)],
                                               f"Attention vs distance, layer {layer}"), key="lg_prof_head")
    with c2:
        show_figure(lf.distance_profile_figure(edges, per_layer, [f"L{i}" for i in range(la.n_layers)],
                                               "Attention vs distance, every layer"), key="lg_prof_layer")
    st.caption("Mean weight of a (query, key) pair at each distance |i − j|, in log-spaced bins, over every valid "
               "query; hover for the bin and value. A head that falls steeply looks locally; a flat tail reads far "
               "back. The dip-then-rise at the largest distances is the weight parked on the first tokens.")


def sink_mass(rec: Recording, key: str = "lg_sink_mass") -> None:
    la = rec.la
    fig = lf.sink_mass_figure(rec.s.sink)
    fig.update_layout(height=max(320, 16 * la.n_layers + 140))
    fig.update_xaxes(tickvals=list(range(la.n_heads)),
                     ticktext=[f"h{h}" + (f"·kv{la.kv_head(h)}" if la.group > 1 else "") for h in range(la.n_heads)])
    show_figure(fig, key=key)
    top = np.unravel_index(np.argmax(rec.s.sink), rec.s.sink.shape)
    st.caption(f"Mean weight each head puts on position 0 over all queries (hover for the exact value). The "
               f"strongest sink here is L{top[0]} H{top[1]}: {rec.s.sink[top]:.1%} of its weight on one token.")


def window_pattern(rec: Recording) -> None:
    la = rec.la
    if not la.sliding_window.any():
        st.caption(f"{la.facts.name}'s config has no sliding window or local/global layer pattern: every layer "
                   "attends to the whole prefix" + (" (causal)." if la.causal.all() else "."))
        return
    show_figure(lf.window_figure(la.sliding_window, la.causal, la.seq_len), key="lg_window")
    st.caption("Layers with a sliding window (orange) see only the last w keys; the others (blue) see every earlier "
               "key. Read from the model's config and checked against the mask it builds.")
