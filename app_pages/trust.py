"""Trust the view? Attention, rollout, flow and gradient attributions checked against the model's output."""
import streamlit as st

from attnviz.ui import attribution as ua
from attnviz.ui import metrics as aw
from attnviz.ui.figure import figure_beside
from attnviz.ui.page import stop as stop_page
from attnviz.ui.present import page_intro

page_intro("Trust the view?",
    "Every other page shows **attention weights**: how much each position looks at each other one. Whether "
    "they explain a prediction is disputed. Jain & Wallace (2019) found attention often disagrees with "
    "gradient-based importance and can be swapped for very different weights without changing the output; "
    "Wiegreffe & Pinter (2019) answered that this does not make it meaningless, but that it has to be "
    "**tested** per model and task. This page tests it on your text: it picks **one output** of the model, asks "
    "several methods which input tokens that output depends on, then checks each method's answer against the "
    "model itself by removing the tokens it ranks highest (DeYoung et al. 2020) and by scrambling the model "
    "(Adebayo et al. 2018)."
)

result, request = aw.hf_inputs("Trust the view")
settings = ua.controls(request)
if settings is None:
    stop_page()
ua.run_controls(settings)
report = ua.current_report(settings)
if report is None:
    st.info("Press **Run** to compute every method and test it on this input. Changing the output, the position "
            "or the steps needs a new run; earlier results come back at once.")
    stop_page()

ua.headline(report)

st.subheader("What each method says")
with figure_beside(ua.scores_figure(report), "trust_scores", in_place=True):  # a long input's labels spaced
    st.markdown(
        "One row per method, one column per input token; red = pushes the output up, blue = down, each row "
        "divided by its own largest |score| so that rankings compare (hover for the exact value).\n\n"
        "- **Raw attention**: the last layer's attention row of the output position, averaged over heads. "
        "Only that layer's softmax weights: no values, no other layers, no feed-forward blocks.\n"
        "- **Rollout** (Abnar & Zuidema 2020): attention multiplied through every layer with the residual "
        "added (weight 0.5, as on the Rollout page). All layers' weights; still no values or MLPs.\n"
        "- **Attention flow**: the same layer graph read as a maximum-flow problem (short inputs only).\n"
        "- **Value-weighted rollout** (Kobayashi et al. 2020, 2021): rollout of the norms of what each head "
        "actually adds (weight × transformed value), with the residual. Adds the values and output projection.\n"
        "- **ALTI** (Ferrando et al. 2022): each token's share of a layer's output measured by distance after the "
        "residual and layer norm, rolled out. Adds the residual and the norm; still no feed-forward blocks.\n"
        "- **Gradient × input**: the gradient of the output with respect to each word embedding, times the "
        "embedding, summed over its dimensions (signed). The whole model, but only locally.\n"
        "- **Integrated gradients** (Sundararajan et al. 2017): the gradient averaged along the straight path "
        "from a baseline to the input, times (input − baseline). The whole model; the scores add up to "
        "f(input) − f(baseline) up to the error shown on its row. The baseline is all-zero word embeddings for an "
        "encoder. For a causal model it is a neutral token's embedding (the padding token, else end-of-text) at "
        "every position except the first, which keeps its own token: such a model parks attention on its first "
        "token, and from zero embeddings or with that token replaced the output jumps along the path (SmolLM2's "
        "logit by up to 23), so the scores could not add up. The first token therefore gets no score.\n\n"
        "For the similarity outputs the sentence embedding is the mean over every position, so the attention "
        "methods use the **mean of all rows** instead of one row.")

st.subheader("Do the methods agree?")
with figure_beside(ua.spearman_figure(report), "trust_spearman"):
    st.markdown(
        "Spearman rank correlation between every pair of methods, over the tokens that can be removed "
        "(special tokens and, for a next-token output, the first token and later positions are left out). "
        "1 = the same order, "
        "0 = unrelated, −1 = reversed. **undefined** means a method gave every token the same score, so it "
        "ranks nothing. Jain & Wallace's observation is that attention and gradients often land near 0 here.")

st.subheader("Which method tracks the output? Remove what it ranks highest")
st.markdown(
    "A token counts as removed when its word embedding is replaced by the baseline's (named above; its "
    "position stays). "
    "If a method ranks well, removing its top tokens should change the output most (**deletion** falls "
    "fast, high **comprehensiveness**), and keeping only them should nearly restore it (**insertion** rises "
    "fast, low **sufficiency**).")
ua.curves(report, "output f")

st.subheader("Sanity check: does the method depend on what the model learned?")
fig = ua.randomisation(report)
if fig is None:
    st.info("The model-randomisation check was off for this run: switch it on above and press Run.")
else:
    with figure_beside(fig, "trust_random_bars"):
        st.markdown(
            "Adebayo et al. (2018): an explanation of a trained model should change when the model's weights "
            "are scrambled. A copy of the model had every transformer block re-initialised (its own "
            "initialisation, seeded; the embeddings kept), and each method was run again on it. Bars are the "
            "Spearman correlation between the scores on the trained and on the randomised model. **Near 1 = the "
            "method barely depends on what the model learned** (red bars above 0.5): it mostly reflects the "
            "input or the architecture, not the trained computation.")
    st.caption("Correlations: " + ua.randomisation_words(report) + ".")
