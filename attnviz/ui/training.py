"""Widgets of the training-evolution page: controls, the live panel of a running job, the scrubber."""
from __future__ import annotations

import math

import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.progress import check
from attnviz.training import figures
from attnviz.training.runs import Run, from_bytes, to_bytes
from attnviz.ui import jobs
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.ui.cache import recorded

POSITIONAL_LABELS = {"learned": "learned", "sinusoidal": "sinusoidal", "rope": "RoPE", "alibi": "ALiBi", "none": "none"}
SHORT_LABELS = {"self": "encoder self-attention", "decoder": "decoder self-attention", "cross": "cross-attention"}
STACK_LABELS = {"self": "encoder self-attention", "decoder": "decoder self-attention (causal)",
                "cross": "cross-attention (decoder → encoder)"}


def stack_label(kind: str, stack: str, short: bool = False) -> str:
    """Name of an attention stack for a model kind ("self" of a causal decoder is causal)."""
    if stack == "self" and kind != "encoder-decoder":
        return "causal self-attention" if kind == "decoder" else "self-attention"
    return (SHORT_LABELS if short else STACK_LABELS).get(stack, stack)


def runs() -> dict:
    """This session's runs by slot ("toy:reverse", "finetune", "checkpoints", "file")."""
    return st.session_state.setdefault("tr_runs", {})


# ------------------------------------------------------------------ jobs

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


# ------------------------------------------------------------------ evolution view

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
    cols[3].metric("Finished", "yes" if run.completed else f"cancelled at step {m.get('steps_done')}")
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


# ------------------------------------------------------------------ controls per source

def _task_defaults(task: str) -> dict:
    from attnviz.training.record import RECORDED
    from attnviz.training.trainer import DEFAULT_MODELS

    m, t = DEFAULT_MODELS[task], RECORDED[task]
    return {"tr_dmodel": m["d_model"], "tr_heads": m["n_heads"], "tr_layers": m["n_layers"],
            "tr_dlayers": m.get("n_decoder_layers", 1), "tr_pos": m["positional"], "tr_steps": t.steps,
            "tr_every": t.snapshot_every, "tr_lr": t.lr, "tr_seed": t.seed}


def _reset_task_defaults():
    for k, v in _task_defaults(st.session_state["tr_task"]).items():
        st.session_state[k] = v


def toy_controls() -> str:
    """Task, architecture and training settings, Train / recorded buttons. Returns the run slot."""
    from attnviz.training.tasks import TASKS

    bind({"tr_task": str, "tr_steps": int})  # a shared link opens the same task (and step count)
    if st.session_state.get("tr_task") not in TASKS:  # absent, or a hand-edited link's unknown task
        st.session_state["tr_task"] = "reverse"
    for k, v in _task_defaults(st.session_state["tr_task"]).items():
        st.session_state.setdefault(k, v)
    c1, c2 = st.columns([2, 3])
    task = c1.selectbox("Task", list(TASKS), format_func=lambda t: TASKS[t].title, key="tr_task",
                        on_change=_reset_task_defaults)
    slot = f"toy:{task}"
    with c2.expander("Model and training settings", expanded=False):
        a, b, c = st.columns(3)
        number_box(a, "d_model", 8, 256, step=8, key="tr_dmodel", help="Width of the residual stream.")
        number_box(b, "Heads", 1, 16, key="tr_heads", help="Must divide d_model.")
        c.selectbox("Positions", list(POSITIONAL_LABELS), format_func=POSITIONAL_LABELS.get, key="tr_pos",
                    help="RoPE and ALiBi only act inside self-attention scores; tasks whose cross-attention needs "
                         "absolute positions (reverse, copy) learn slowly or not at all without learned/sinusoidal.")
        number_box(a, "Layers" if TASKS[task].kind == "decoder" else "Encoder layers", 0, 6, key="tr_layers")
        if TASKS[task].kind == "encoder-decoder":
            number_box(b, "Decoder layers", 0, 6, key="tr_dlayers")
        number_box(c, "Seed", 0, 10_000, key="tr_seed")
        number_box(a, "Steps", 1, 5000, step=50, key="tr_steps")
        number_box(b, "Snapshot every k steps", 1, 500, key="tr_every")
        c.select_slider("Learning rate", [3e-4, 1e-3, 3e-3, 1e-2], key="tr_lr", format_func=lambda v: f"{v:g}")
    st.caption(TASKS[task].expect)
    b1, b2, _ = st.columns([1, 1.3, 3])
    train = b1.button("▶ Train now", type="primary", key="tr_train", disabled=job_of(slot) is not None,
                      help="Trains from scratch in the background; the page updates live.")
    if b2.button("Show the recorded run", key="tr_recorded", help="The run shipped with attnviz: opens at once."):
        runs().pop(slot, None)
    if slot not in runs() and job_of(slot) is None and recorded(task) is not None:
        runs()[slot] = recorded(task)
    if train:
        _start_toy(task, slot)
    return slot


def _start_toy(task: str, slot: str) -> None:
    from attnviz.models.scratch import ScratchConfig
    from attnviz.training.tasks import get_task
    from attnviz.training.trainer import DEFAULT_MODELS, TrainConfig, train

    ss = st.session_state
    try:
        model = ScratchConfig(**{**DEFAULT_MODELS[task], "d_model": int(ss["tr_dmodel"]), "n_heads": int(ss["tr_heads"]),
                                 "n_layers": int(ss["tr_layers"]), "n_decoder_layers": int(ss["tr_dlayers"]),
                                 "positional": ss["tr_pos"], "seed": int(ss["tr_seed"])})
        config = TrainConfig(task=task, steps=int(ss["tr_steps"]), snapshot_every=int(ss["tr_every"]),
                             lr=float(ss["tr_lr"]), seed=int(ss["tr_seed"]), model=model)
        if config.n_snapshots > 400:
            st.warning(f"That would record {config.n_snapshots} snapshots; snapshot less often (at most 400).")
            return
    except AttnvizError as e:
        st.warning(str(e))
        return
    src, dec = get_task(task).probe_tokens()
    start(slot, lambda cb, cancel: train(config, callback=cb, cancel=cancel), "training",
          {"src": src, "dec": dec})
    ss["tr_frame"] = 0
    st.rerun()


def finetune_controls() -> str:
    """Settings and the button that fine-tunes a private copy of the packaged MiniLM."""
    from attnviz.training.finetune import FinetuneConfig

    slot = "finetune"
    d = FinetuneConfig()
    c1, c2, c3, c4 = st.columns(4)
    steps = number_box(c1, "Steps", 5, 1000, d.steps, step=25, key="tr_ft_steps",
                       help="One batch of 16 sentences per step; each snapshot also reads the probe and 96 "
                            "held-out sentences. A run's time is shown beside it, with the machine's load.")
    every = number_box(c2, "Snapshot every k steps", 1, 100, d.snapshot_every, key="tr_ft_every")
    lr = c3.select_slider("Learning rate", [1e-5, 3e-5, 1e-4, 3e-4], d.lr, key="tr_ft_lr",
                          format_func=lambda v: f"{v:g}")
    freeze = c4.toggle("Freeze word embeddings", d.freeze_embeddings, key="tr_ft_freeze")
    probe = st.text_input("Probe sentence (its attention is recorded)", "", key="tr_ft_probe",
                          placeholder="the movie was not good at all .",
                          help="Empty = the probe from assets/finetune_sentiment.json.")
    st.caption("The task: classify template sentences (assets/finetune_sentiment.json) as positive or negative, "
               "where a 'not' flips the meaning. A small classifier is put on top of MiniLM's mean-pooled output "
               "and the whole encoder is trained; the shared model the other pages use is never changed (a copy "
               "is trained). Accuracy is measured on sentences about nouns never seen in training.")
    b1, b2, _ = st.columns([1, 1.3, 3])
    go = b1.button("▶ Fine-tune MiniLM", type="primary", key="tr_ft_go", disabled=job_of(slot) is not None)
    if b2.button("Show the recorded run", key="tr_ft_recorded"):
        runs().pop(slot, None)
    if slot not in runs() and job_of(slot) is None and recorded("finetune") is not None:
        runs()[slot] = recorded("finetune")
    if go:
        try:
            config = FinetuneConfig(steps=int(steps), snapshot_every=int(every), lr=float(lr),
                                    freeze_embeddings=bool(freeze), probe=probe or "")
        except AttnvizError as e:
            st.warning(str(e))
            return slot
        from attnviz.training.finetune import finetune

        try:
            loaded = jobs.load_model("minilm")
        except AttnvizError as e:
            st.warning(str(e))
            return slot
        start(slot, lambda cb, cancel: finetune(config, loaded=loaded, callback=cb, cancel=cancel), "fine-tuning")
        st.session_state["tr_frame"] = 0
        st.rerun()
    return slot


def checkpoint_controls() -> str:
    """A list of checkpoints (folders, hub ids, id@revision) loaded in turn as frames."""
    slot = "checkpoints"
    specs_text = st.text_area(
        "Checkpoints of one model, in training order (one per line)", key="tr_ck_specs", height=120,
        placeholder="/path/to/run/checkpoint-100\n/path/to/run/checkpoint-200\nEleutherAI/pythia-70m@step1000",
        help="Local folders (e.g. a Trainer's checkpoint-N folders), hub ids, or hub-id@revision (Pythia publishes "
             "step checkpoints as revisions: EleutherAI/pythia-70m@step1000). Hub models work only where the hub "
             "is reachable or the revision is in the local HF cache.")
    text = st.text_input("Probe sentence", "The cat sat on the mat because it was tired.", key="tr_ck_text")
    go = st.button("▶ Load the series", type="primary", key="tr_ck_go", disabled=job_of(slot) is not None)
    if go:
        from attnviz.training.checkpoints import checkpoint_series, parse_series
        from attnviz.training.trainer import Progress

        try:
            specs = parse_series(specs_text)
        except AttnvizError as e:
            st.warning(str(e))
            return slot
        if not text.strip():
            st.warning("Type a probe sentence: its attention is recorded for every checkpoint.")
            return slot

        def work(cb, cancel):
            def each(i, n, spec):
                check(cancel, "Loading the checkpoint series")
                cb(Progress(i, n, float("nan"), 0.0, None, None, []))
            return checkpoint_series(specs, text, callback=each)

        start(slot, work, "loading checkpoints")
        st.rerun()
    return slot
