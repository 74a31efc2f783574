"""Lab 9: attention is not explanation: a stripe of weight that moves almost nothing."""
import numpy as np
import streamlit as st

from attnviz.contrib import summary
from attnviz.contrib.figures import mixing_figure, stripe_figure
from attnviz.examples import examples
from attnviz.ui import contrib as cui
from attnviz.ui.figure import show_figure
from attnviz.ui.lab import lab_header, lecture_nav, stop_page
from attnviz.ui.page import part
from attnviz.ui.share import bind

PAGE = "app_pages/lab_explanation.py"
MODEL = "minilm"  # the packaged BERT: its [SEP] stripe is the classic case (Clark et al. 2019)
lab_header(PAGE,
    "A heatmap shows where the softmax puts its weight, and it is tempting to read it as *what the model "
    "uses*. Jain & Wallace (2019) showed that attention weights often disagree with other measures of "
    "importance; Wiegreffe & Pinter (2019) answered that it depends on what you ask. Here is one concrete "
    "way the weights mislead, on a real BERT and one sentence: a token can take a large share of the "
    "weight while the vector it passes on is so short that it moves almost nothing.")

bind({"nx_sentence": str})


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    choices = [a for a, _ in examples()]
    if st.session_state.get("nx_sentence") not in choices:
        st.session_state["nx_sentence"] = choices[0]
    text = st.selectbox("Sentence", choices, key="nx_sentence")
    result, c = cui.model_and_contributions(MODEL, text)
    if result is None:
        stop_page(PAGE)
    tokens = result.tokens
    # the special token that takes the most weight: BERT's [CLS] (first) or [SEP] (last)
    stripes = {t: summary.stripe(result.attention, c, t) for t in (0, len(tokens) - 1)}
    sep = max(stripes, key=lambda t: float(stripes[t][0].mean()))
    w, v = stripes[sep]
    layer, head = np.unravel_index(int(np.argmax(w)), w.shape)
    norms = c.value_norms[layer, head]

    st.subheader(f"1 · The weights: a stripe on {tokens[sep]}")
    left, right = st.columns(2)
    top = float(max(w.max(), v.max()))
    with left:
        show_figure(stripe_figure(w, title=f"Weight on {tokens[sep]} (mean over the rows)", zmax=top), key="nx_w")
    with right:
        show_figure(stripe_figure(v, title=f"Value-weighted share of {tokens[sep]}", zmax=top), key="nx_v")
    st.markdown(
        f"Left: in every layer and head, the share of each row's weight that lands on **{tokens[sep]}**. The "
        f"strongest is **layer {layer}, head {head}**: on average **{w[layer, head]:.0%}** of each token's weight "
        f"goes to {tokens[sep]}. Right: the same head once each weight is multiplied by the length of the value "
        f"vector it moves, ‖α f(x)‖, and the row rescaled to sum to 1: **{v[layer, head]:.0%}**. Averaged over all "
        f"heads: **{w.mean():.0%}** of the weight, **{v.mean():.0%}** of what is moved.")

    st.subheader("2 · Why: the value vector is short")
    st.markdown(
        f"In layer {layer}, head {head}, ‖f(x)‖ of **{tokens[sep]}** is **{norms[sep]:.3g}**; the median over the "
        f"other tokens is **{float(np.median(np.delete(norms, sep))):.3g}**. The head parks its weight on "
        f"{tokens[sep]} when it has nothing to look for, and the short vector makes that a near no-op (Clark et "
        "al. 2019; Kobayashi et al. 2020). The heatmap page shows the same with **Show: value-weighted** in the "
        "sidebar.")

    st.subheader("3 · The residual: most of a token stays itself")
    by_layer = summary.mixing_by_layer(c, ~np.asarray(result.special_mask, dtype=bool))
    means = c.mean_mixing(~np.asarray(result.special_mask, dtype=bool))
    show_figure(mixing_figure(by_layer), key="nx_mix")
    st.markdown(
        f"The weights say **{means['weights']:.0%}** of each word's new representation comes from other tokens. "
        f"Counting what the values carry: **{means['value-weighted']:.0%}**. Adding the residual connection, which "
        f"carries each token's own vector past the attention: **{means['+ residual']:.0%}**; with the LayerNorm as "
        f"well: **{means['+ residual + LayerNorm']:.0%}**.")

    with st.expander("Quick check", icon=":material/quiz:"):
        st.markdown(
            "1. A head puts 90% of its weight on [SEP]. Does [SEP] shape that head's output? *Not necessarily: "
            "multiply by ‖f(x)‖ first.*\n"
            "2. Why does rollout add the identity? *For the residual connection: step 3 shows it carries most of "
            "each token.*\n"
            "3. Which pages test explanations against the prediction? *Analyse → Trust the view? compares "
            "weights, rollout, ALTI and gradients with deletion curves.*")
    st.caption("Common mistake: reading a heatmap as an explanation. The weights are one input to the answer; "
               "check what the values carry and what the prediction depends on before saying a head 'uses' a token.")
    lecture_nav(PAGE)


lab()
