"""Logit lens page: the next-token guess read from every layer of a causal LM."""
import streamlit as st

from attnviz.logit_lens.figures import DEFAULT_WINDOW, lens_heatmap, position_lines
from attnviz.logit_lens.lens import MAX_TOP_K
from attnviz.ui import logit_lens as ll
from attnviz.ui.figure import figure_beside, show_figure
from attnviz.ui.heads import token_picker
from attnviz.ui.present import page_intro, presenting
from attnviz.ui.share import bind

page_intro("Logit lens",
    "A causal language model keeps one vector per token, the **residual stream**, that every block reads "
    "from and adds to; only after the last block is it turned into a guess of the next token. The **logit "
    "lens** (nostalgebraist, 2020) reads that guess early: it takes the stream after the embeddings and "
    "after every block and applies what the model applies only at the end, the **final norm** (an RMSNorm "
    "or LayerNorm that rescales the vector) and the **unembedding** (the matrix that scores the vector "
    "against every token of the vocabulary), then a softmax. Row by row you see the guess form.")

bind(ll.KEYS)
request, tokens = ll.causal_of_sidebar()
n = len(tokens)

st.subheader("Every layer's guess")
c1, c2 = st.columns([3, 1])
start, stop = ll.window_start(n, DEFAULT_WINDOW, container=c1)
k = ll.top_k_slider(MAX_TOP_K, container=c2)
if n > DEFAULT_WINDOW:
    st.caption(f"Showing positions **{start}–{stop - 1}** of {n} ({DEFAULT_WINDOW} at a time, so the page stays "
               "light and only the shown positions are read); move *First position shown* to see the others.")
table = st.container()  # filled once the position below is chosen: one lens run reads both
(st.expander("Reading it with care", icon=":material/info:") if presenting() else st.container()).markdown(
    "The early rows are **not** what the model \"thinks\" at that depth. The final norm and unembedding were "
    "trained for the last layer's stream only; earlier streams live in a slightly different basis, so the "
    "lens can show noise (often the input token itself, or punctuation) long before the model has settled. "
    "That a guess appears at some layer says the information is already decodable that way, not that it is "
    "used there. The **tuned lens** (Belrose et al., 2023) refines this with a small learned map per layer "
    "before the unembedding; it reads earlier layers more faithfully but needs training, so it is not shown "
    "here. Models with tied embeddings, such as SmolLM2, often show little until the last few layers.")

st.subheader("One position, layer by layer")
p1, p2 = st.columns([3, 1])
pos = token_picker(tokens, ll.POSITION, label="Position", default=n - 1, container=p1,
                   help="The input token whose next-token guesses are followed through the layers.")
log = p2.toggle("Log scale", key=ll.LOG, help="Probabilities on a log axis: small early-layer values become visible.")
lens = ll.lens_at(request, [*range(start, stop), pos])
n_states, j = lens.n_states, lens.index(pos)
with table:
    show_figure(lens_heatmap(lens, start, DEFAULT_WINDOW, top_k=k), key="ll_table")
    st.caption(f"Rows are the {n_states} states of the residual stream, the embeddings (layer 0) at the bottom "
               f"and the model's own output (layer {n_states - 1}) at the top. Each column is an input token; its "
               "cells show what each layer would predict **after** that token, coloured by the probability of "
               f"that top guess. Hover a cell for its {k} most likely tokens and their exact probabilities.")
first, settled = int(lens.first_top1()[j]), int(lens.settled_from()[j])
right = figure_beside(position_lines(lens, pos, log=log), key="ll_lines")
with right:
    nxt = tokens[pos + 1] if pos + 1 < n else None
    st.markdown(
        f"After **{tokens[pos]}** (position {pos}) the model predicts **{lens.top_labels[-1, j, 0]}** with "
        f"probability {lens.top_probs[-1, j, 0]:.3g}. It is the lens's top guess from layer **{first}** on"
        + (f", and stays on top from layer **{settled}**." if settled != first else ".")
        + (f" The text goes on with **{nxt}**, which the output gives {lens.p_next[-1, j]:.3g}."
           if nxt is not None else " This is the last token: the text does not say what comes next."))
    st.markdown(
        "The solid line is the probability each layer gives to the model's final prediction; the dashed one, "
        "to the token that really follows in the text. Below, the **KL divergence** KL(final ‖ layer) in nats "
        "(natural-log units): how much the final distribution is surprised, on average, when coded with that "
        "layer's guesses. It is 0 at the output and usually falls in the last layers.")
