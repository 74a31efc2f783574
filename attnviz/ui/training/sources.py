"""Training evolution, the controls of each source: a toy task, fine-tuning the packaged BERT, a series of
checkpoints."""
from __future__ import annotations

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.progress import check
from attnviz.ui import jobs
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind
from attnviz.ui.cache import recorded
from attnviz.ui.training.live import job_of, start
from attnviz.ui.choices import keep_choice
from attnviz.ui.training.state import POSITIONAL_LABELS, runs


SETTINGS = {"tr_task": str, "tr_steps": int, "tr_dmodel": int, "tr_heads": int, "tr_pos": str, "tr_layers": int,
            "tr_dlayers": int, "tr_seed": int, "tr_every": int, "tr_lr": float}  # the toy model's settings, in the link
LEARNING_RATES = [3e-4, 1e-3, 3e-3, 1e-2]


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

    bind(SETTINGS)  # a shared link opens the same task and settings (the next ▶ Train now uses them)
    if st.session_state.get("tr_task") not in TASKS:  # absent, or a hand-edited link's unknown task
        st.session_state["tr_task"] = "reverse"
    defaults = _task_defaults(st.session_state["tr_task"])
    for k, v in defaults.items():
        st.session_state.setdefault(k, v)
    for k, options in (("tr_pos", POSITIONAL_LABELS), ("tr_lr", LEARNING_RATES)):
        keep_choice(k, options, defaults[k])  # a hand-edited link's value the box does not offer: the default
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
        c.select_slider("Learning rate", LEARNING_RATES, key="tr_lr", format_func=lambda v: f"{v:g}")
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
    # read only by the button below: committing it reruns nothing, so a press that takes the focus from it is not
    # lost to a rerun that redraws the page between the press and the release
    probe = st.text_input("Probe sentence (its attention is recorded)", "", key="tr_ft_probe", on_change="ignore",
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
        on_change="ignore",  # read only by the button below, as the probe sentences
        placeholder="/path/to/run/checkpoint-100\n/path/to/run/checkpoint-200\nEleutherAI/pythia-70m@step1000",
        help="Local folders (e.g. a Trainer's checkpoint-N folders), hub ids, or hub-id@revision (Pythia publishes "
             "step checkpoints as revisions: EleutherAI/pythia-70m@step1000). Hub models work only where the hub "
             "is reachable or the revision is in the local HF cache.")
    text = st.text_input("Probe sentence", "The cat sat on the mat because it was tired.", key="tr_ck_text",
                         on_change="ignore")
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
