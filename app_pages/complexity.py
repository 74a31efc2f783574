"""Complexity calculator: attention's compute and memory against n for a model config, and measured here."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from attnviz.complexity import costs as cx
from attnviz.complexity import figures as cp
from attnviz.ui import complexity as ui
from attnviz.ui.figure import figure_beside
from attnviz.ui.page import lazy_tabs
from attnviz.ui.present import page_intro
from attnviz.ui.tour import tour

ui.init_state()
page_intro("Attention complexity calculator",
    "How much compute and memory attention needs as the sequence length **n** grows, for a real "
    "model's sizes, and what each efficient variant changes. Pick a preset or type your own sizes; "
    "every number below follows from the formulas shown, and the last tab measures attention on "
    "this machine.")

tour("complexity")

preset = ui.inputs()
cfg = ui.config(preset)
if cfg is not None:
    ui.headline(cfg)


def table() -> None:
    text = cx.sentences(cfg)
    st.dataframe(pd.DataFrame(cx.cost_rows(cfg)), hide_index=True, width="stretch")
    st.caption("≈ marks approximations of softmax attention; the others compute it exactly. "
               "FLOPs and activations cover all layers and the batch; scores are one layer's.")
    left, right = st.columns([3, 2])
    with left:
        st.markdown("\n".join(f"- {t}" for t in text.values()))
    with right:
        st.markdown(
            "**How to read this.** FLOPs count the two matrix products of attention (QKᵀ and PV), "
            "2 per multiply-add, over all layers and the batch. *Scores held* is what one layer must "
            "keep at once; *activations* are what training keeps for the backward pass. The KV cache is "
            "what generation stores per token: 2 × L × g × d_head values. Bytes are binary, as memory "
            "is (1 KiB = 1024 bytes, 1 GiB = 2³⁰ bytes); FLOPs decimal (1 GFLOP = 10⁹).")
        with st.expander("What each variant does"):
            st.markdown("\n".join(f"- **{v.label}**: {v.idea}" for v in cx.VARIANTS.values()))


def curves() -> None:
    ui.curves(cfg)
    st.caption(
        "Both axes are logarithmic, so a cost growing like nᵖ is a straight line of slope p: full and "
        "multi-head attention rise with slope 2, linear attention and a fixed window with slope 1, "
        "the √n-block sparse pattern with slope 1.5. FlashAttention has the same FLOPs as full "
        "attention but its scores stay at n × B per head. The dotted line marks your n.")


def ffn() -> None:
    m_ffn = cx.ffn_matrices(cfg)
    with figure_beside(cp.ffn_crossover(cfg), "cx_ffn"):
        st.markdown("Per token and layer, the attention core costs **4·n·d** FLOPs (n scores of "
                    "width d, then n values), the feed-forward block **2·m·d·d_ff** with m weight "
                    "matrices. They are equal at")
        st.latex(r"n^{*} = \frac{m\,d_{ff}}{2} = \frac{%d \cdot %s}{2} = %s" % (
            m_ffn, f"{cfg.d_ff:,}".replace(",", "{,}"), f"{cx.ffn_crossover(cfg):,.0f}".replace(",", "{,}")))
        st.markdown(f"Here m = {m_ffn} ({'gated, SwiGLU' if cfg.gated_ffn else 'plain'}). With the "
                    f"classic 4d-wide plain block, n* = 4d (3,072 for BERT-base); a gated block with "
                    f"d_ff ≈ 8d/3 moves it to about 4d as well, a wider one further out. Below n* the "
                    f"feed-forward dominates; above it, attention does. {cx.sentences(cfg)['ffn']}")


def rnn() -> None:
    with figure_beside(cp.rnn_comparison(cfg), "cx_rnn"):
        st.markdown("A recurrent layer of width d does two d×d matrix-vector products per token, "
                    "**4·n·d²** FLOPs in all; self-attention's core does **4·n²·d**. Attention is "
                    "cheaper while n < d, but the decisive difference is the depth of the work:")
        st.dataframe(pd.DataFrame(cx.rnn_rows(cfg)), hide_index=True, width="stretch")
        st.markdown(cx.sentences(cfg)["rnn"])


def fix_input() -> None:
    st.info("Fix the input above to see the costs.")


# only the open tab runs; it goes into the link
lazy_tabs(ui.TABS, "cx_tab", ((table, curves, ffn, rnn) if cfg is not None else (fix_input,) * 4) + (ui.measured_here,))
