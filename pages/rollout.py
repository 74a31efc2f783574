"""Rollout page: which input tokens feed each output position once layers are chained."""
import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.metrics.entropy import result_masks
from attnviz.metrics.rollout import HEAD_FUSIONS, contributions, fuse_heads, rollout_fused
from attnviz.plots_analytics import matrix_heatmap, token_bars
from attnviz.ui import analytics_widgets as aw
from attnviz.ui.sidebar import require_result
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind
from attnviz.ui.share import stop as stop_page
from attnviz.ui.shell import ensure_app_shell

ensure_app_shell()

st.title("Attention rollout")
st.markdown(
    "One layer's attention only says how tokens mix **in that layer**, but every layer also keeps its "
    "input through the residual connection. **Rollout** (Abnar & Zuidema, 2020) follows the mixing through "
    "the stack: in each layer the heads are fused into one matrix F, the residual is added as "
    "M = (1 − w)·F + w·I, every row is rescaled to sum to 1, and the layers are multiplied: "
    "R = M_L ⋯ M_2 M_1. Row i of R estimates how much each input token contributes to position i. It is an "
    "estimate, not an explanation: it ignores the values, the feed-forward blocks and the layer norms."
)

result = require_result()
analysis = aw.analysis_of_sidebar()
n, n_layers = result.seq_len, result.n_layers

bind({"ro_fusion": str, "ro_residual": float, "ro_discard": float, "ro_layer": int, "ro_target": int})
for _k, _v in (("ro_residual", 0.5), ("ro_discard", 0.0), ("ro_target", 0)):
    st.session_state.setdefault(_k, _v)
if not 0 <= st.session_state.get("ro_layer", n_layers - 1) < n_layers:  # another model has fewer layers
    st.session_state["ro_layer"] = n_layers - 1
st.session_state.setdefault("ro_layer", n_layers - 1)
c1, c2, c3 = st.columns(3)
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
    if fusion == "mean" and residual == 0.5 and discard == 0.0:
        fused, rolled = analysis.fused_mean, analysis.rollout
    else:
        fused = fuse_heads(result.attention, fusion)
        rolled = rollout_fused(fused, residual=residual, discard_ratio=discard, allowed=allowed)
except AttnvizError as e:
    st.warning(str(e))
    stop_page()

layer = st.slider("After layer", 0, n_layers - 1, key="ro_layer",
                  help="Rollout after this layer (0 = the first layer alone).") if n_layers > 1 else 0
left, right = st.columns(2)
tokens = result.tokens
with left:
    show_figure(matrix_heatmap(fused[layer], tokens, tokens, title=f"Raw attention, layer {layer} ({fusion} of heads)",
                                   zmin=0.0, colorscale="Blues"), key="ro_raw")
with right:
    show_figure(matrix_heatmap(rolled[layer], tokens, tokens, title=f"Rollout through layers 0–{layer}",
                                   zmin=0.0, colorscale="Oranges", colorbar="share"), key="ro_rolled")
st.caption("Left: what layer's heads do on their own. Right: the chained estimate; its rows sum to 1. "
           "Bright columns are tokens that end up feeding many positions.")

st.subheader("Which input tokens feed one output token")
t1, t2 = st.columns([1, 3])
target = t1.number_input("Output token position", min_value=None, step=1, key="ro_target",
                         help="0-based position; 0 is [CLS] for BERT-like models.")
try:
    target_i = int(target)
    if target_i != target:
        raise ValueError
    share = contributions(rolled, target_i, layer)
except ValueError as e:
    st.warning(str(e) if str(e) else f"The target token must be a whole number from 0 to {n - 1}.")
    stop_page()
t2.markdown(f"Target: **{tokens[target_i]}** (position {target_i}). Its rollout row after layer {layer} "
            f"sums to {share.sum():.4f}; the largest share goes to **{tokens[int(share.argmax())]}** "
            f"({share.max():.3f}).")
show_figure(token_bars(share, tokens, title=f"Contribution of each input token to '{tokens[target_i]}' "
                                                f"({target_i}) after layer {layer}",
                           ytitle="share", highlight=target_i, special_mask=result.special_mask), key="ro_bars")
st.caption("The red bar is the target itself; light bars are special tokens. With the residual included, "
           "a token always keeps part of itself.")
