"""Long inputs, the recording section: one forward pass in a background job (progress, Cancel) that keeps
every layer's queries and keys and their summaries, the Recording the views read, and the line that sums it up."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import streamlit as st

from attnviz import timings
from attnviz.errors import AttentionUnavailable
from attnviz.types import LoadedModel, Request
from attnviz.ui import jobs
from attnviz.ui.long.inputs import DENSE_LIMIT
from attnviz.units import human_bytes

JOB = "lg_job"
DONE = "_lg_done"  # session: the last complete recording
GRID_BUDGET = 1_500_000  # bytes of float32 tiles the all-heads grid may send to the browser


@dataclass(frozen=True)
class Recording:
    """One complete recording of the page: its request, the LongAttention and its LongSummaries."""

    id: str  # model|length|tiles|text digest
    request: Request  # the model, text and length limit recorded
    tiles: int
    la: object  # LongAttention, or DenseAttention (the same interface over a dense result)
    s: object  # LongSummaries
    seconds: float
    dense_reason: str | None = None  # why the model's q and k could not be recorded (la is dense then)
    reused: bool = False  # the server held this recording already (from this or another session): no pass ran


def run_id(request: Request, setting: int) -> str:
    """The id of a run of the page (a recording: setting = tiles; a sink run: the cache size):
    model|length|setting|text digest."""
    digest = hashlib.blake2b(request.text.encode("utf-8", "replace"), digest_size=8).hexdigest()
    return f"{request.model}|{request.max_tokens}|{setting}|{digest}"


def grid_tiles(n_layers: int, n_heads: int) -> int:
    """Tiles per side of every head in the grid: 64, or fewer so the grid's float32 tiles stay under
    GRID_BUDGET (SmolLM2's 270 heads: 32)."""
    t = 64
    while t > 8 and n_layers * n_heads * t * t * 4 > GRID_BUDGET:
        t //= 2
    return t


def _work(request: Request, tiles: int):
    def work(report, cancel):
        import time

        from attnviz.ui.cache import dense_recording, get_model, long_recording

        t0 = time.perf_counter()
        loaded = get_model(request.model)
        rid = run_id(request, tiles)
        report(0, loaded.facts.n_layers, "one forward pass: each layer recorded and summarised in turn…")
        passes = []  # the pass reports each layer; a recording the server holds already reports none

        def counted(*args):
            passes.append(1)
            report(*args)

        try:
            la, s = long_recording(request, tiles, _report=counted, _cancel=cancel)
        except AttentionUnavailable as e:  # the same views over the dense weights, up to the dense limit
            report(0, 1, f"its queries and keys cannot be recorded: reading its dense weights (at most {DENSE_LIMIT} "
                         "tokens)…")
            la, s = dense_recording(request.with_limit(min(request.max_tokens, DENSE_LIMIT)), tiles)
            return Recording(rid, request, tiles, la, s, time.perf_counter() - t0, dense_reason=str(e))
        return Recording(rid, request, tiles, la, s, time.perf_counter() - t0, reused=not passes)

    return work


def _collect(job) -> None:
    if job.result is not None:
        st.session_state[DONE] = job.result  # the last complete recording only


def _draw(job) -> None:
    jobs.bar(job)


def record_panel(request: Request, loaded: LoadedModel, n: int) -> Recording | None:
    """▶ Record and Cancel, the job's progress; the complete recording of this request, or None."""
    model_key = request.model
    tiles = grid_tiles(loaded.facts.n_layers, loaded.facts.n_heads)
    rid = run_id(request, tiles)
    done = st.session_state.get(DONE)
    busy = jobs.running(JOB)
    b = st.columns([1, 1, 4])
    if b[0].button("▶ Record", key="lg_record", type="primary", disabled=busy or (done is not None and done.id == rid),
                   help="One forward pass that keeps every layer's queries and keys and computes their summaries, in the "
                        "background."):
        jobs.start(JOB, _work(request, tiles), "long recording", tag=rid,
                   timing=(model_key, timings.RECORDING, f"{n:,} tokens"))
        st.rerun()
    b[1].button("■ Cancel", key="lg_cancel", disabled=not busy, on_click=jobs.cancel, args=(JOB,))
    b[2].caption(f"{n:,} tokens on {loaded.facts.name}: one pass records and summarises every layer, in the background "
                 f"(the page stays usable); {timings.hint(model_key, timings.RECORDING)}.")
    jobs.watch(JOB, _draw, on_done=_collect)
    job = jobs.current(JOB, rid)  # a failed or cancelled recording of other settings says nothing here
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
        st.success(f"Recorded **{la.seq_len:,} tokens** on {rec.request.model} in {rec.seconds:.1f} s from its dense "
                   f"weights ({human_bytes(la.nbytes)}).", icon=":material/check:")
        from attnviz.long.record import CAPPED

        st.info(f"{rec.dense_reason.removesuffix(CAPPED)} "
                f"The views below read its **dense weights** of the first **{la.seq_len:,} tokens** instead (every "
                "map held in memory, as on the other pages), through the same interface: exact maps, zoom, top-k, "
                "summaries.", icon=":material/info:")
        return
    dense = 4 * la.n_layers * la.n_heads * la.seq_len ** 2
    when = ("(the server had recorded this text and length before: no pass ran)" if rec.reused
            else f"in {rec.seconds:.1f} s")
    st.success(f"Recorded **{la.seq_len:,} tokens** on {rec.request.model} {when}: queries and keys "
               f"{human_bytes(la.nbytes)}, where every map densely would be {human_bytes(dense)}. The grid sends "
               f"{human_bytes(s.pooled.mean.nbytes)} of float32 tiles.", icon=":material/check:")