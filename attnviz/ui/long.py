"""The Long inputs page's Streamlit parts: the text (sidebar, upload, bundled), the length with its memory,
the recording job (progress, Cancel), and the views over a recording: the pooled all-heads grid grouped by
key/value head, one head pooled with an exact zoom, token focus over the whole text, top-k lines, distance
profiles, sink mass, the sliding-window pattern and the live sink experiment."""
from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from attnviz import timings
from attnviz.errors import AttentionUnavailable, AttnvizError, BadInput
from attnviz.long import figures as lf
from attnviz.ui import jobs
from attnviz.ui.figure import show_figure
from attnviz.ui.metrics import switch_to_causal_button
from attnviz.units import human_bytes, count_text

JOB, SINK_JOB = "lg_job", "lg_sink_job"
DONE, SINKS_DONE = "_lg_done", "_lg_sinks_done"  # session: the last complete recording / sink run
SOURCES = ("The sidebar's text", "A file (.txt, .md)", "Bundled long text (~5,000 words)")
LENGTHS = (512, 1024, 2048, 4096, 8192)
DENSE_LIMIT = 512  # the dense pages' limit (a model without recorded q/k support stays there)
BUNDLED = Path(__file__).resolve().parents[2] / "assets" / "long" / "attention-notes.txt"
GRID_BUDGET = 1_500_000  # bytes of float32 tiles the all-heads grid may send to the browser
MAX_ZOOM = 256  # largest zoom window (positions per side)
OVERVIEW_TILES = 128  # tiles per side of one head's pooled overview
KEYS = {"lg_source": str, "lg_len": int, "lg_how": str}  # the page's settings kept in the link


@dataclass(frozen=True)
class Recording:
    """One complete recording of the page: its settings, the LongAttention and its LongSummaries."""

    id: str  # model|length|tiles|text digest
    model_key: str
    max_tokens: int
    tiles: int
    la: object  # LongAttention, or DenseAttention (the same interface over a dense result)
    s: object  # LongSummaries
    seconds: float
    dense_reason: str | None = None  # why the model's q and k could not be recorded (la is dense then)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def grid_tiles(n_layers: int, n_heads: int) -> int:
    """Tiles per side of every head in the grid: 64, or fewer so the grid's float32 tiles stay under
    GRID_BUDGET (SmolLM2's 270 heads: 32)."""
    t = 64
    while t > 8 and n_layers * n_heads * t * t * 4 > GRID_BUDGET:
        t //= 2
    return t


# ------------------------------------------------------------------ model and text
def model():
    """(model key, LoadedModel) of the sidebar, or stop the page with a plain message."""
    from attnviz.ui.metrics import sidebar_model

    key, _, _, loaded = sidebar_model("The Long inputs page")
    return key, loaded


def context_note(loaded) -> None:
    """Say how far the model reads; on a short-context model (MiniLM: 512) offer SmolLM2 (8,192)."""
    from attnviz.extract import token_limit

    cap = token_limit(loaded, LENGTHS[-1])
    if cap <= DENSE_LIMIT:
        st.info(f"**{loaded.facts.name}** reads at most **{cap:,} positions** (its table of learned position "
                "embeddings has no more rows), so on it this page records at most that many tokens. For thousands "
                "of tokens use a long-context causal model: the packaged SmolLM2-135M reads 8,192.",
                icon=":material/info:")
        switch_to_causal_button("lg_switch")


def read_upload(name: str, data: bytes) -> str:
    """The text of an uploaded .txt/.md file; BadInput when it is not text (binary bytes, not UTF-8)."""
    if not data.strip():
        raise BadInput(f"'{name}' is empty: upload a .txt or .md file with some text in it.")
    if b"\x00" in data[:65536]:
        raise BadInput(f"'{name}' is not a text file (it holds binary bytes). Upload a plain .txt or .md file.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"'{name}' is not UTF-8 text. Save it as a plain UTF-8 .txt or .md file and upload it again.")


def text_source() -> str | None:
    """The text chosen on the page, or None after a plain message."""
    source = st.radio("Text", SOURCES, key="lg_source", horizontal=True,
                      help="The sidebar's box holds up to 20,000 characters; a file or the bundled text can be longer.")
    if source == SOURCES[0]:
        return st.session_state.get("text", "")
    if source == SOURCES[2]:
        try:
            return BUNDLED.read_text(encoding="utf-8")
        except OSError:
            st.warning(f"The bundled text is missing ({BUNDLED.name}); reinstall attnviz or upload a file.")
            return None
    up = st.file_uploader("A text file (.txt or .md)", type=["txt", "md"], key="lg_upload")
    if up is None:
        st.info("Choose a .txt or .md file, or pick the bundled long text.")
        return None
    try:
        return read_upload(up.name, up.getvalue())
    except BadInput as e:
        st.warning(str(e))
        return None


def length_picker(loaded, text: str, container=None) -> tuple[int, int] | None:
    """(length limit, tokens that will be recorded) with the memory they take, or None after a plain
    message (empty text, a length that does not fit in free memory)."""
    from attnviz.extract import encode, token_limit
    from attnviz.long.memory import check_long_fits, long_memory_parts

    facts = loaded.facts
    cap = token_limit(loaded, LENGTHS[-1])  # the model's positions and its tokenizer's limit
    options = [n for n in LENGTHS if n < cap] + [min(cap, LENGTHS[-1])]
    if st.session_state.get("lg_len") not in options:
        st.session_state["lg_len"] = max([n for n in options if n <= 2048] or options[:1])
    c = container or st
    if len(options) == 1:
        limit = options[0]
        c.caption(f"Length limit: **{limit:,} tokens**, all that {facts.name} reads.")
    else:
        limit = c.select_slider("Length limit (tokens)", options=options, key="lg_len", format_func=lambda n: f"{n:,}",
                                help=f"The first tokens of the text up to this limit are recorded ({facts.name} "
                                     f"reads at most {cap:,}).")
    try:
        e = encode(loaded, text, max_tokens=limit)
    except AttnvizError as err:
        st.warning(str(err))
        return None
    n = len(e.ids)
    d_ff = getattr(loaded.model.config, "intermediate_size", None)
    parts = long_memory_parts(facts, n, d_ff)
    t = e.truncation
    st.caption(f"The text has **{t.n_tokens_requested:,} tokens**; "
               + (f"the first **{n:,}** are recorded." if t.truncated else f"all **{n:,}** are recorded.")
               + f" Memory for the recording: about **{human_bytes(sum(parts.values()))}** (queries and keys "
               f"{human_bytes(parts['record'])}, summaries {human_bytes(parts['summaries'])}, the pass "
               f"{human_bytes(parts['forward'])}), where every map kept densely in float32 would take "
               f"{human_bytes(4 * facts.n_layers * facts.n_heads * n * n)}.")
    try:
        check_long_fits(facts, n, d_ff=d_ff)
    except BadInput as err:
        st.warning(str(err))
        return None
    return limit, n


# ------------------------------------------------------------------ the recording job
def _work(model_key: str, text: str, limit: int, tiles: int):
    def work(report, cancel):
        import time

        from attnviz.ui.cache import dense_recording, get_model, long_recording

        t0 = time.perf_counter()
        loaded = get_model(model_key)
        rid = f"{model_key}|{limit}|{tiles}|{_digest(text)}"
        report(0, loaded.facts.n_layers, "one forward pass: each layer recorded and summarised in turn…")
        try:
            la, s = long_recording(model_key, text, limit, tiles, _report=report, _cancel=cancel)
        except AttentionUnavailable as e:  # the same views over the dense weights, up to the dense limit
            report(0, 1, f"its queries and keys cannot be recorded: reading its dense weights (at most {DENSE_LIMIT} "
                         "tokens)…")
            la, s = dense_recording(model_key, text, min(limit, DENSE_LIMIT), tiles)
            return Recording(rid, model_key, limit, tiles, la, s, time.perf_counter() - t0, dense_reason=str(e))
        return Recording(rid, model_key, limit, tiles, la, s, time.perf_counter() - t0)

    return work


def _collect(job) -> None:
    if job.result is not None:
        st.session_state[DONE] = job.result  # the last complete recording only


def _draw(job) -> None:
    jobs.bar(job)


def record_panel(model_key: str, loaded, text: str, limit: int, n: int) -> Recording | None:
    """▶ Record and Cancel, the job's progress; the complete recording of these settings, or None."""
    tiles = grid_tiles(loaded.facts.n_layers, loaded.facts.n_heads)
    rid = f"{model_key}|{limit}|{tiles}|{_digest(text)}"
    done = st.session_state.get(DONE)
    busy = jobs.running(JOB)
    b = st.columns([1, 1, 4])
    if b[0].button("▶ Record", key="lg_record", type="primary", disabled=busy or (done is not None and done.id == rid),
                   help="One forward pass that keeps every layer's queries and keys and computes their summaries, in the "
                        "background."):
        jobs.start(JOB, _work(model_key, text, limit, tiles), "long recording", tag=rid,
                   timing=(model_key, timings.RECORDING, f"{n:,} tokens"))
        st.rerun()
    b[1].button("■ Cancel", key="lg_cancel", disabled=not busy, on_click=jobs.cancel, args=(JOB,))
    b[2].caption(f"{n:,} tokens on {loaded.facts.name}: one pass records and summarises every layer, in the background "
                 f"(the page stays usable); {timings.hint(model_key, timings.RECORDING)}.")
    jobs.watch(JOB, _draw, on_done=_collect)
    job = jobs.current(JOB)
    if job is not None and job.done and job.error:
        if "capped at the dense" in job.error:  # AttentionUnavailable: this model stays at the dense limit
            st.warning(job.error + " The Attention heatmap page shows its dense maps up to 512 tokens.")
        else:
            st.warning(job.error)
    if done is not None and done.id == rid:
        return done
    if done is None and not busy:
        st.info("Press **▶ Record** to run the model over the text.")
    elif done is not None and not busy:
        st.info("The settings changed since the last recording: press **▶ Record** to record this text and length.")
    return None


def summary_line(rec: Recording) -> None:
    la, s = rec.la, rec.s
    if rec.dense_reason:
        st.success(f"Recorded **{la.seq_len:,} tokens** on {rec.model_key} in {rec.seconds:.1f} s from its dense "
                   f"weights ({human_bytes(la.nbytes)}).", icon=":material/check:")
        from attnviz.long.record import CAPPED

        st.info(f"{rec.dense_reason.removesuffix(CAPPED)} "
                f"The views below read its **dense weights** of the first **{la.seq_len:,} tokens** instead (every "
                "map held in memory, as on the other pages), through the same interface: exact maps, zoom, top-k, "
                "summaries.", icon=":material/info:")
        return
    dense = 4 * la.n_layers * la.n_heads * la.seq_len ** 2
    st.success(f"Recorded **{la.seq_len:,} tokens** on {rec.model_key} in {rec.seconds:.1f} s: queries and keys "
               f"{human_bytes(la.nbytes)}, where every map densely would be {human_bytes(dense)}. The grid sends "
               f"{human_bytes(s.pooled.mean.nbytes)} of float32 tiles.", icon=":material/check:")


# ------------------------------------------------------------------ views
def gqa_note(la) -> str:
    if la.group == 1:
        return f"Each of the {la.n_heads} heads has its own keys (no grouped-query attention)."
    groups = "; ".join(f"heads h{k * la.group}–h{(k + 1) * la.group - 1} share key head {k}"
                       for k in range(la.n_kv_heads))
    return (f"Grouped-query attention: {la.n_heads} query heads read {la.n_kv_heads} key/value heads ({groups}); "
            "the keys of a group are stored once.")


def grid(rec: Recording, how: str, selected) -> None:
    la, s = rec.la, rec.s
    tiles = s.pooled.tiles(how)
    e = s.pooled.edges
    fig = lf.pooled_grid_figure(tiles, e, la.group, how, selected=selected)
    event = show_figure(fig, key="lg_grid", on_select="rerun", selection_mode="points", name="long-grid")
    from attnviz.ui.metrics import clicked_head

    hit = clicked_head(event)
    if hit and st.session_state.get("_lg_grid_seen") != hit:
        st.session_state["_lg_grid_seen"] = hit
        st.session_state["lg_open"] = hit
        st.rerun()
    size = int(np.diff(e).max())
    st.caption(f"Each cell is the **{how}** of a block of about {size}×{size} weights ({len(e) - 1}×{len(e) - 1} "
               f"tiles per head; tile sizes differ by at most one). {gqa_note(la)} Colours saturate at the 99th "
               "percentile of the tiles; hover a cell for its query and key positions and exact pooled value; "
               "click a head to open it below.")


def head_picker(la):
    from attnviz.ui.heads import head_picker as picker

    opened = st.session_state.pop("lg_open", None)
    if opened is not None:
        st.session_state["lg_layer"], st.session_state["lg_head"] = opened
    return picker(la.n_layers, la.n_heads, "lg")


def zoom_controls(n: int):
    """(q0, k0, size) of the zoom window from three number inputs, clamped to the input."""
    c = st.columns(3)
    size = int(c[2].number_input("Window size", min(8, n), min(MAX_ZOOM, n), min(64, n), step=8, key="lg_zsize",
                                 help=f"Positions per side, at most {MAX_ZOOM}: the window is computed exactly."))
    q0 = int(c[0].number_input("Query start", 0, n - 1, max(0, min(n - size, n // 2)), key="lg_zq",
                               help="First query row of the window."))
    k0 = int(c[1].number_input("Key start", 0, n - 1, max(0, min(n - size, n // 2 - size // 2)), key="lg_zk",
                               help="First key column of the window (keys after the query are 0 for a causal model)."))
    q0, k0 = min(q0, n - size), min(k0, n - size)
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
    q = int(st.number_input("Query position", 0, n - 1, n - 1, key="lg_fq",
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
    k = int(c[0].number_input("Keys per query (k)", 1, 16, 3, key="lg_k"))
    span = int(c[1].number_input("Queries shown", 1, 256, min(64, n), key="lg_kspan"))
    q0 = int(c[2].number_input("From query", 0, n - 1, max(0, n - span), key="lg_kq"))
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


# ------------------------------------------------------------------ sinks, live
def _sink_work(model_key: str, text: str, limit: int, cache: int):
    def work(report, cancel):
        from attnviz.ui.cache import sink_run

        return sink_run(model_key, text, limit, cache, 4, _report=report, _cancel=cancel)

    return work


def _sink_collect(job) -> None:
    if job.result is not None:
        st.session_state[SINKS_DONE] = (job.data["sid"], job.result)


def sinks_live(model_key: str, loaded, text: str, limit: int, n: int, rec: Recording | None = None) -> None:
    if loaded.facts.kind != "decoder":
        st.info(f"The sink experiment predicts each next token, so it needs a causal language model; "
                f"**{loaded.facts.name}** is an {loaded.facts.kind}.", icon=":material/info:")
        switch_to_causal_button("lg_switch_sinks")
        return
    options = [c for c in (64, 128, 256, 512, 1024) if c < n] or [max(8, n // 2)]
    if len(options) == 1:
        cache = options[0]
        st.caption(f"Cache size: **{cache} tokens** (the text is short).")
    else:
        cache = int(st.select_slider("Cache size (tokens kept)", options, value=options[min(2, len(options) - 1)],
                                     key="lg_cache", help="The window-only cache keeps the last tokens; the other "
                                                          "keeps the first 4 plus the last (size − 4)."))
    sid = f"{model_key}|{limit}|{cache}|{_digest(text)}"
    busy = jobs.running(SINK_JOB)
    b = st.columns([2, 1, 4])
    if b[0].button("▶ Run the experiment", key="lg_sinks_run", type="primary", disabled=busy):
        jobs.start(SINK_JOB, _sink_work(model_key, text, limit, cache), "sink experiment", tag=sid, sid=sid,
                   timing=(model_key, timings.SINKS, f"{n:,} tokens, cache of {cache}"))
        st.rerun()
    b[1].button("■ Cancel", key="lg_sinks_cancel", disabled=not busy, on_click=jobs.cancel, args=(SINK_JOB,))
    b[2].caption(f"Three passes over {n:,} tokens (full cache, window only, sinks + window) in chunks of 128; "
                 f"{timings.hint(model_key, timings.SINKS)}.")
    jobs.watch(SINK_JOB, jobs.bar, on_done=_sink_collect)
    job = jobs.current(SINK_JOB)
    if job is not None and job.done and job.error:
        st.warning(job.error)
    done = st.session_state.get(SINKS_DONE)
    if done is None or done[0] != sid:
        return
    run = done[1]
    names = {"full": "full cache", "window": f"window only ({run.cache})",
             "sinks+window": f"{run.sinks} sinks + window ({run.cache - run.sinks})"}
    curves = {names[p]: run.curve(p, 64) for p in run.loss}
    left, right = st.columns([3, 2])
    with left:
        fig = lf.sink_curves_figure(curves, run.positions, "Next-token loss (running mean of 64 positions)")
        fig.add_vline(x=run.cache, line=dict(color="#888", dash="dot"), annotation_text="the window is full",
                      annotation_position="top right")
        show_figure(fig, key="lg_sink_curves")
    if rec is not None:
        with right:
            sink_mass(rec, key="lg_sink_mass_live")
    st.caption("After the window first evicts (position " + f"{run.cache:,}): mean loss " + ", ".join(
        f"{names[p]} **{run.mean_after(p):.3f}**" for p in run.loss) + " nats.")
