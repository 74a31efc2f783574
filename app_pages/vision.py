"""Vision: a vision transformer's attention drawn over image patches: every head, rollout and flow, distance."""
import streamlit as st

from attnviz.ui import vision as vi
from attnviz.ui.present import page_intro

page_intro("Attention over image patches",
    "A vision transformer cuts an image into square **patches**, turns each into a token and puts a **[CLS]** token "
    "in front, whose final state is read out as the class. Its attention is the same softmax over the same kind of "
    "tokens as a text model's, so it can be drawn over the image itself: where [CLS] (or any patch you click) looks, "
    "in every layer and head. The model is a small vision transformer trained on this machine (Training page, "
    "*Images (ViT)*), or any ViT or DeiT from a folder."
)

s = vi.subject()
if s is not None:
    st.caption(s.caption)
    st.subheader("Heads over the image")
    vi.heads_view(s)
    st.subheader("Rollout and attention flow over the patches")
    vi.rollout_view(s)
    st.subheader("Local and global heads; learned positions")
    vi.depth_view(s)
if st.session_state.get("vi_source", vi.SOURCES[0]) == vi.SOURCES[0]:
    st.subheader("Attention over training")
    st.caption("The probe image's [CLS] attention at each snapshot recorded while the model learned.")
    vi.snapshots_view()
