"""Training evolution, the live run: a training job in the background, its progress, loss curve and latest
attention refreshed every second, and what it keeps when it ends."""
from __future__ import annotations

import streamlit as st

from attnviz.training import figures
from attnviz.ui import jobs
from attnviz.ui.training.state import runs


def start(slot: str, work, label: str, tokens: dict | None = None) -> None:
    """Run work(callback, cancel) -> Run in the background; tokens: {"src", "dec"} probe labels."""
    from attnviz.training.jobs import LiveTraining

    st.session_state["tr_live_tokens"] = tokens or {}
    live = LiveTraining()
    jobs.start("tr_job", lambda report, cancel: work(live.callback(report), cancel), label, tag=slot, live=live)


def job_of(slot: str):
    """The running (or just finished, not yet collected) job of a slot."""
    return jobs.current("tr_job", slot)


def _collect(job) -> None:
    """A job ended: keep its run, open it at its last frame, say why it failed."""
    slot = st.session_state["tr_job"][0]
    if job.result is not None:
        runs()[slot] = job.result
        st.session_state["tr_frame"] = job.result.n_frames - 1
    st.session_state["tr_job_error"] = job.error
    st.session_state.pop("tr_job", None)


def _live_body(job, stack: str | None):
    live = job.data["live"]
    acc = "" if live.accuracy is None else f" · held-out accuracy {live.accuracy:.1%}"
    jobs.bar(job, f"{job.label.capitalize()}: {job.message}", extra=acc.removeprefix(" · "))
    st.button("Cancel", key="tr_cancel", type="secondary", help="Stop now; the snapshots so far are kept.",
              on_click=jobs.cancel, args=("tr_job",))
    if job.cancelled:
        st.caption("Cancelling… the run so far will be shown.")
    left, right = st.columns(2)
    with left:
        if live.losses:
            st.plotly_chart(figures.curves(None, live_losses=live.losses, height=300), width="stretch",
                            key="tr_live_loss")
        else:
            st.caption("The loss curve appears after the first step.")
    with right:
        snap = live.snapshot
        if snap:
            which = stack if stack in snap else ("cross" if "cross" in snap else "self")
            a = snap[which][-1].mean(axis=0)  # last layer, mean over heads
            q, k = a.shape
            st.plotly_chart(figures.attention_heatmap(
                a, job_tokens(which, q), job_tokens(which, k, keys=True),
                title=f"Latest {'cross-attention' if which == 'cross' else 'self-attention'}, last layer, "
                      f"mean of heads · step {live.snapshot_step}",
                height=300), width="stretch", key="tr_live_att")


def job_tokens(stack: str, n: int, keys: bool = False) -> tuple:
    """Token labels of the running job's probe (set when it started), or positions."""
    toks = st.session_state.get("tr_live_tokens") or {}
    seq = toks.get("src" if (stack == "self" or (stack == "cross" and keys)) else "dec")
    return tuple(seq) if seq is not None and len(seq) == n else tuple(str(i) for i in range(n))


def live_panel(slot: str, stack: str | None = None) -> None:
    """Progress bar, loss curve and latest attention of the running job, refreshed every second."""
    jobs.watch("tr_job", lambda job: _live_body(job, stack), on_done=_collect, tag=slot)


def show_job_error() -> None:
    err = st.session_state.pop("tr_job_error", None)
    if err:
        st.warning(err)
