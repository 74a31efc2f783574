"""Long inputs, the live attention-sink experiment: StreamingLLM's three KV-cache policies over the text in a
background job, their next-token loss curves beside the recording's sink mass."""
from __future__ import annotations

import streamlit as st

from attnviz import timings
from attnviz.long import figures as lf
from attnviz.types import LoadedModel, Request
from attnviz.ui import jobs
from attnviz.ui.figure import show_figure
from attnviz.ui.long.recording import Recording, run_id
from attnviz.ui.long.views import sink_mass
from attnviz.ui.metrics import switch_to_causal_button

SINK_JOB = "lg_sink_job"
SINKS_DONE = "_lg_sinks_done"  # session: the last complete sink run
SINKS = 4  # first tokens the sinks + window cache keeps


def _sink_work(request: Request, cache: int):
    def work(report, cancel):
        from attnviz.ui.cache import sink_run

        return sink_run(request, cache, SINKS, _report=report, _cancel=cancel)

    return work


def _sink_collect(job) -> None:
    if job.result is not None:
        st.session_state[SINKS_DONE] = (job.data["sid"], job.result)


def sinks_live(request: Request, loaded: LoadedModel, n: int, rec: Recording | None = None) -> None:
    model_key = request.model
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
    sid = run_id(request, cache)
    busy = jobs.running(SINK_JOB)
    b = st.columns([2, 1, 4])
    if b[0].button("▶ Run the experiment", key="lg_sinks_run", type="primary", disabled=busy):
        jobs.start(SINK_JOB, _sink_work(request, cache), "sink experiment", tag=sid, sid=sid,
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
