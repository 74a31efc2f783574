"""Training evolution, the recorded run: the frame scrubber, the head chosen, the summary and the evolution
figures, and reading a saved run file."""
from __future__ import annotations

import math

import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.training import figures
from attnviz.training.runs import Run, from_bytes, to_bytes
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind
from attnviz.ui.training.state import stack_label


def frame_slider(run: Run) -> int:
    """The step slider; a link carries the snapshot scrubbed to (a link past the last opens the last)."""
    bind({"tr_frame": int})
    n = run.n_frames
    f = int(st.session_state.get("tr_frame", n - 1))
    st.session_state["tr_frame"] = min(max(f, 0), n - 1)
    if n == 1:
        st.caption(f"One frame only: {run.frame_labels[0]}.")
        return 0
    return st.select_slider("Training step (scrub through the snapshots)", options=list(range(n)),
                            format_func=lambda i: run.frame_labels[i], key="tr_frame",
                            help="Each position is one snapshot of the probe's attention.")


def head_choice(run: Run) -> tuple[str, int, int | None]:
    stacks = list(run.stacks)
    default = "cross" if "cross" in stacks else "self"
    if st.session_state.get("tr_stack") not in stacks:
        st.session_state["tr_stack"] = default
    c1, c2, c3 = st.columns([2, 1, 1])
    stack = c1.selectbox("Attention", stacks, format_func=lambda s: stack_label(run.facts.kind, s), key="tr_stack")
    a = run.attention[stack]
    n_l, n_h = a.shape[1], a.shape[2]
    if int(st.session_state.get("tr_layer", n_l - 1)) >= n_l:
        st.session_state["tr_layer"] = n_l - 1
    st.session_state.setdefault("tr_layer", n_l - 1)
    layer = c2.selectbox("Layer", list(range(n_l)), key="tr_layer")
    opts = ["mean"] + list(range(n_h))
    if st.session_state.get("tr_head", "mean") not in opts:
        st.session_state["tr_head"] = "mean"
    head = c3.selectbox("Head", opts, key="tr_head",
                        format_func=lambda h: "mean of heads" if h == "mean" else f"head {h}")
    return stack, int(layer), None if head == "mean" else int(head)


def summary(run: Run) -> None:
    m = run.meta
    cols = st.columns(4)
    acc = m.get("final_accuracy")
    cols[0].metric("Held-out accuracy", "—" if acc is None or (isinstance(acc, float) and math.isnan(acc))
                   else f"{acc:.1%}", help=f"Greedy predictions on {m.get('heldout', 'the')} held-out examples "
                                           "never seen in training.")
    cols[1].metric("Snapshots", run.n_frames)
    from attnviz.training.finetune import timing_note

    timing = timing_note(m)
    cols[2].metric("Seconds", f"{m.get('seconds', float('nan')):,.1f}", help=timing,
                   delta=f"load {m['load_average']:.1f} on {m['cpu_count']} cores" if timing else None,
                   delta_color="off", delta_arrow="off")
    if run.completed:
        cols[3].metric("Finished", "yes")
    else:  # the value stays short enough for its column; where it stopped goes under it
        done, total = m.get("steps_done"), (m.get("train") or {}).get("steps")
        where = (f"at step {done:,}" + (f" of {total:,}" if isinstance(total, int) else "")) if isinstance(done, int) else None
        cols[3].metric("Finished", "cancelled", delta=where, delta_color="off", delta_arrow="off",
                       help="The run was cancelled; the snapshots up to it are kept.")
    f = run.facts
    st.caption(f"**{run.title}** · {f.kind} · {f.n_layers} layer(s) × {f.n_heads} heads · d_model {f.d_model} · "
               f"positions: {f.position_scheme} · probe: “{' '.join(run.tokens)}”")
    if timing:
        st.caption(timing)
    if m.get("expect"):
        st.info("What to look for: " + m["expect"])


def evolution(run: Run, slot: str) -> None:
    """The scrubber: a step slider, the chosen head at that step, curves, entropy, settling."""
    summary(run)
    stack, layer, head = head_choice(run)
    frame = frame_slider(run)
    q_tokens, k_tokens = figures.stack_tokens(run, stack)
    who = "mean of heads" if head is None else f"head {head}"
    left, right = st.columns([1, 1])
    with left:
        show_figure(figures.attention_heatmap(
            figures.head_map(run, stack, frame, layer, head), q_tokens, k_tokens,
            title=f"{stack_label(run.facts.kind, stack, True)} · layer {layer} · {who} · {run.frame_labels[frame]}",
            height=460), key="tr_heat")
    with right:
        if len(run.loss_values) or np.isfinite(run.frame_accuracy).any():
            show_figure(figures.curves(run, frame, height=460), key="tr_curves")
        else:
            st.caption("This series has no loss or accuracy (checkpoints carry only weights).")
    st.caption("Rows are queries (the position doing the looking), columns are keys. Bright = more weight. "
               "Drag the slider to move through training; the dashed red line marks the same step on the curves.")

    n_heads_total = run.attention[stack].shape[1] * run.attention[stack].shape[2]
    if n_heads_total <= 16:
        with st.expander("All heads of this attention at the chosen step", expanded=False):
            show_figure(figures.heads_grid(run, stack, frame), key="tr_grid")

    st.subheader("Animation")
    st.caption(f"Press ▶ Play to watch {who} of layer {layer} form over training, or drag its slider.")
    show_figure(figures.animation(run, stack, layer, head, height=440), key="tr_anim")

    st.subheader("Entropy over time and when each head settled")
    e1, e2 = st.columns([3, 2])
    with e1:
        show_figure(figures.entropy_lines(run, stack, layer, frame), key="tr_entropy")
        st.caption(f"Mean entropy of each head's rows (layer {layer}), in nats. Uniform attention over n keys has "
                   f"entropy ln n (ln {len(k_tokens)} = {np.log(len(k_tokens)):.2f} here); a head that locks onto one "
                   "key drops towards 0. A falling line is a head becoming selective.")
    with e2:
        tol = st.slider("Settled when within (total variation)", 0.02, 0.5, 0.1, 0.02, key="tr_tol",
                        help="A head counts as settled from the first snapshot after which its map stays within "
                             "this mean total-variation distance of its final map.")
        show_figure(figures.settle_grid(run, stack, tol), key="tr_settle")
        st.caption("The step from which each head stays close to its final pattern. Early = the head found its "
                   "job quickly; late = it kept changing until the end.")

    d1, d2 = st.columns(2)
    with d1:
        st.download_button("Download this run (.npz)", to_bytes(run), file_name=f"attnviz-run-{slot.replace(':', '-')}.npz",
                           mime="application/octet-stream", key="tr_download",
                           help="Open it later with 'Run file' above. Format: see attnviz/training/runs.py.")
    with d2:
        from attnviz.ui.sidebar import use_trained

        from attnviz.contrib.compute import run_contributions

        if run.source == "vision":  # the Vision page draws it over images
            from attnviz.ui.vision import use_step

            if st.button("Use this step on the other pages", key="tr_share", on_click=use_step, args=(run, frame),
                         help="Opens this model on the Vision page, drawn over held-out or uploaded images."):
                st.success(f"Stored {run.frame_labels[frame]} of “{run.title}”: open the Vision page.")
        elif st.button("Use this step on the other pages", key="tr_share", on_click=use_trained,
                       args=(run.result(frame), run_contributions(run, frame)),
                       help="Stores this frame's attention and selects 'Trained toy model' in the sidebar, so the "
                            "heatmap, entropy, rollout and head-role pages show it."):
            st.success(f"Stored {run.frame_labels[frame]} of “{run.title}”: the sidebar's model is now "
                       "'Trained toy model'; open the heatmap, entropy, rollout or head-roles page.")


def read_upload(uploaded) -> Run | None:
    """A Run from an uploaded file, or None after a plain warning."""
    try:
        return from_bytes(uploaded.getvalue(), uploaded.name)
    except AttnvizError as e:
        st.warning(str(e))
        return None
