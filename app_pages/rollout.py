"""Rollout page: which input tokens feed each output position once layers are chained."""
import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.metrics.entropy import result_masks
from attnviz.metrics.flow import MAX_FLOW_TOKENS, flow_shares
from attnviz.metrics.rollout import (HEAD_FUSIONS, RESIDUAL, contributions, fuse_heads, mixing_matrices,
                                     rollout_fused)
from attnviz.metrics.figures import grouped_token_bars, matrix_heatmap, token_bars
from attnviz.ui import metrics as aw
from attnviz.ui.sidebar import require_result
from attnviz.ui import contrib as lens_ui
from attnviz.ui.cache import flow_row
from attnviz.ui.figure import show_figure
from attnviz.ui.jobs import Bar
from attnviz.ui.heads import token_picker
from attnviz.ui.share import bind, hold
from attnviz.ui.present import page_intro, presenting
from attnviz.ui.page import part
from attnviz.ui.page import stop as stop_page
from attnviz.types import SUMMED
from attnviz.units import count_text

page_intro("Attention rollout",
    "One layer's attention only says how tokens mix **in that layer**, but every layer also keeps its "
    "input through the residual connection. **Rollout** (Abnar & Zuidema, 2020) follows the mixing through "
    "the stack: in each layer the heads are fused into one matrix F, the residual is added as "
    "M = (1 − w)·F + w·I, every row is rescaled to sum to 1, and the layers are multiplied: "
    "R = M_L ⋯ M_2 M_1. Row i of R estimates how much each input token contributes to position i. It is an "
    "estimate, not an explanation: it ignores the values, the feed-forward blocks and the layer norms."
)

result = require_result(lens=True)
lens_ui.note(result)
if result.heads_summed:
    st.caption("ALTI maps already hold the residual: with w = 0 this is ALTI's own rollout (Ferrando et al. 2022).")
analysis = aw.analysis_of_sidebar(result=result)
n, n_layers = result.seq_len, result.n_layers

bind({"ro_fusion": str, "ro_residual": float, "ro_discard": float, "ro_layer": int, "ro_target": int})
for _k, _v in (("ro_residual", RESIDUAL), ("ro_discard", 0.0)):
    st.session_state.setdefault(_k, _v)
if not 0 <= st.session_state.get("ro_layer", n_layers - 1) < n_layers:  # another model has fewer layers
    st.session_state["ro_layer"] = n_layers - 1
st.session_state.setdefault("ro_layer", n_layers - 1)
c1, c2, c3 = st.columns(3)
if result.heads_summed:  # one map per layer: nothing to fuse; the fusion chosen for the other lenses is kept
    c1.selectbox("Head fusion", [SUMMED], key="ro_fusion_summed", disabled=True,
                 help="ALTI has one map per layer, its heads already summed, so there is nothing to fuse; the "
                      "fusion chosen for the other lenses is kept.")
    fusion = "mean"  # of one map: the map itself
else:
    fusion = c1.selectbox("Head fusion", HEAD_FUSIONS, key="ro_fusion",
                          help="How the heads of a layer become one matrix: their mean (the paper's choice), "
                               "max or min per cell.")
residual = c2.slider("Residual weight w", 0.0, 1.0, step=0.05, key="ro_residual",
                     help="Share of the identity (the residual path) in each layer's matrix; 0.5 = A + I, halved.")
discard = c3.number_input("Discard ratio", step=0.05, format="%.2f", key="ro_discard",
                          help="Fraction of the weakest fused weights set to 0 in each layer before the residual "
                               "is added (never the [CLS] / first column). Must be at least 0 and below 1.")

allowed, _ = result_masks(result)
allowed = None if allowed.all() else allowed
try:
    if fusion == "mean" and residual == RESIDUAL and discard == 0.0:  # what the analysis computed
        fused, rolled = analysis.fused_mean, analysis.rollout
    else:
        fused = fuse_heads(result.attention, fusion)
        rolled = rollout_fused(fused, residual=residual, discard_ratio=discard, allowed=allowed)
except AttnvizError as e:
    st.warning(str(e))
    stop_page()


@part
def after_layer() -> None:
    """The layer slider and everything it changes: the maps, one output token's sources and the attention flow.
    A new layer, output token or flow switch reruns only this part; the fusion controls above rerun the page."""
    layer = st.slider("After layer", 0, n_layers - 1, key="ro_layer",
                      help="Rollout after this layer (0 = the first layer alone).") if n_layers > 1 else 0
    left, right = st.columns(2)
    tokens = result.tokens
    with left:
        raw = {"ALTI": "ALTI contributions", "value-weighted": "Value-weighted attention"}.get(result.quantity, "Raw attention")
        show_figure(matrix_heatmap(fused[layer], tokens, tokens, title=f"{raw}, layer {layer} " + (
                                       f"({SUMMED})" if result.heads_summed else f"({fusion} of heads)"),
                                       zmin=0.0, colorscale="Blues", colorbar=lens_ui.label(result)),
                    key="ro_raw", in_place=True)
    with right:
        show_figure(matrix_heatmap(rolled[layer], tokens, tokens, title=f"Rollout through layers 0–{layer}",
                                       zmin=0.0, colorscale="Oranges", colorbar="share",
                                       xtitle="input token", ytitle="output token"), key="ro_rolled", in_place=True)
    st.caption("Left: what layer's heads do on their own. Right: the chained estimate; its rows sum to 1. "
               "Bright columns are tokens that end up feeding many positions.")

    st.subheader("Which input tokens feed one output token")
    t1, t2 = st.columns([1, 3])
    target_i = token_picker(tokens, "ro_target", label="Output token", container=t1,
                            help="The output position whose sources are traced; 0 is [CLS] for BERT-like models.")
    share = contributions(rolled, target_i, layer)
    t2.markdown(f"Target: **{tokens[target_i]}** (position {target_i}). Its rollout row after layer {layer} "
                f"sums to {share.sum():.4f}; the largest share goes to **{tokens[int(share.argmax())]}** "
                f"({share.max():.3f}).")
    show_figure(token_bars(share, tokens, title=f"Contribution of each input token to '{tokens[target_i]}' "
                                                    f"({target_i}) after layer {layer}",
                               ytitle="share", highlight=target_i, special_mask=result.special_mask),
                key="ro_bars", in_place=True)
    st.caption("The red bar is the target itself; light bars are special tokens. With the residual included, "
               "a token always keeps part of itself.")

    st.subheader("Attention flow")
    # in presentation mode the explanation folds away (the lecturer says it) so the heading keeps its figure
    (st.expander("About attention flow", icon=":material/info:") if presenting() else st.container()).markdown(
        "**Attention flow** (Abnar & Zuidema, 2020) reads the same layer matrices M as a network: one node per "
        "token per layer, and an edge from token i in one layer to token j in the layer below that can carry "
        "at most M[i, j]. The flow from an output token to an input token is the **maximum flow** between them: "
        "rollout adds up every path's product of weights, flow asks how much can pass at once when each edge "
        "has a capacity, so a token reachable only through one weak edge gets little. Shares below are each "
        "flow divided by the sum over inputs (as the paper shows them). One max-flow problem per token pair "
        f"makes it slow, so it runs on inputs of at most {count_text(MAX_FLOW_TOKENS)} tokens.")
    if n > MAX_FLOW_TOKENS:
        st.info(f"This input has {count_text(n)} tokens; attention flow is offered up to {MAX_FLOW_TOKENS}. Shorten the text "
                "in the sidebar (one sentence works) to see it; rollout above works at any length.")
        stop_page()
    mixes = mixing_matrices(fused, residual=residual, discard_ratio=discard, allowed=allowed)
    with st.spinner("Solving max-flow problems…"):
        flow = flow_row(mixes, target_i, layer)
    flow_share = flow_shares(flow)
    show_figure(grouped_token_bars({"rollout share": share, "flow share": flow_share}, tokens,
                                   title=f"Rollout and attention flow into '{tokens[target_i]}' ({target_i}) "
                                         f"after layer {layer}", ytitle="share"), key="ro_flow_bars", in_place=True)
    keeps = ("every token keeps at least w of itself in every layer" if fusion != "max" else
             "every token gets w of itself before the rows are rescaled (max fusion's rows sum to more than 1, so "
             "after the rescaling it can keep less than w)")
    st.caption(f"Raw flow values for '{tokens[target_i]}' run from {flow.min():.3f} to {flow.max():.3f} (at most 1: "
               f"each layer's rows sum to 1). With a residual weight w, {keeps}, so flow rarely drops near 0 and its "
               "shares are flatter than rollout's.")
    hold("ro_flow_all")
    if st.toggle("Flow for every output token", key="ro_flow_all",
                 help=f"{n} x {n} max-flow problems on a {layer + 2}-layer graph; a few seconds."):
        rows = []
        with Bar("Attention flow for every output token…") as bar:
            for t in range(n):
                rows.append(flow_row(mixes, t, layer))
                bar(t + 1, n, f"Attention flow: output token {t + 1} of {n}")
        all_shares = flow_shares(np.stack(rows))
        left, right = st.columns(2)
        with left:
            show_figure(matrix_heatmap(rolled[layer], tokens, tokens, title=f"Rollout through layers 0–{layer}",
                                       zmin=0.0, colorscale="Oranges", colorbar="share",
                                       xtitle="input token", ytitle="output token"),
                        key="ro_rolled_again", in_place=True)
        with right:
            show_figure(matrix_heatmap(all_shares, tokens, tokens, title=f"Attention flow through layers 0–{layer}",
                                       zmin=0.0, colorscale="Greens", colorbar="share",
                                       xtitle="input token", ytitle="output token"),
                        key="ro_flow_matrix", in_place=True)
        st.caption("Row i: the shares of every input token in output token i. Compare the two: flow spreads "
                   "credit over more inputs, because one strong path cannot be counted more than its capacity.")


after_layer()
