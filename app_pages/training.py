"""Training evolution: watch attention form while a small transformer learns, then scrub through it."""
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.ui.training import evolution, live, sources, state
from attnviz.ui import vision
from attnviz.ui.share import bind
from attnviz.ui.present import page_intro
from attnviz.ui.tour import tour

page_intro("Training evolution",
    "A transformer is not born with its attention patterns: they appear while it learns. Here a small "
    "transformer, built from attnviz's own attention code, learns a toy task on the CPU in seconds, and every few "
    "steps the attention it pays on one fixed **probe** input is recorded. Press **Train** to watch it live, "
    "or scrub through a recorded run. Reversing a sequence is the classic example: at first the decoder's "
    "cross-attention is a blur, then it snaps onto the **anti-diagonal**, because output *i* must read input "
    "*n−1−i*. You can also fine-tune the packaged BERT and watch how much (or how little) its pretrained heads "
    "move, or load a series of checkpoints of one model as frames."
)

tour("training")

SOURCES = ["Toy task", "Images (ViT)", "Fine-tune BERT", "Checkpoint series", "Run file"]
bind({"tr_source": str})
if st.session_state.get("tr_source") not in SOURCES:
    st.session_state["tr_source"] = SOURCES[0]
source = st.segmented_control("What to watch", SOURCES, key="tr_source",
                              help="Toy task: train a small transformer here. Images (ViT): a vision transformer on "
                                   "images. Fine-tune BERT: adapt the packaged MiniLM. Checkpoint series: saved models loaded in turn. Run file: open a saved run.")
source = source or SOURCES[0]
live.show_job_error()

slot = None
if source == "Toy task":
    slot = sources.toy_controls()
elif source == "Images (ViT)":
    slot = vision.training_controls(live.start, live.job_of, state.runs)
elif source == "Fine-tune BERT":
    slot = sources.finetune_controls()
elif source == "Checkpoint series":
    slot = sources.checkpoint_controls()
else:
    slot = "file"
    up = st.file_uploader("A run file saved from this page (.npz)", type=["npz"], key="tr_upload")
    if up is not None:
        sig = (up.name, up.size)
        if st.session_state.get("tr_upload_sig") != sig:
            run = evolution.read_upload(up)
            if run is not None:
                state.runs()["file"] = run
                st.session_state["tr_upload_sig"] = sig
                st.session_state["tr_frame"] = run.n_frames - 1

if slot is not None:
    live.live_panel(slot, st.session_state.get("tr_stack"))
    if live.job_of(slot) is None:
        run = state.runs().get(slot)
        if run is None:
            st.info("Nothing to show yet: start a run above"
                    + (" or open a run file." if slot == "file" else "."))
        else:
            try:
                evolution.evolution(run, slot)
            except AttnvizError as e:
                st.warning(str(e))
