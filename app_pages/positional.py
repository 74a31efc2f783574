"""Positional encodings: sinusoidal, the loaded model's learned table, RoPE, ALiBi, why positions, comparison."""
from __future__ import annotations

import streamlit as st

from attnviz.ui.page import lazy_tabs
from attnviz.ui.positional import TABS
from attnviz.ui.share import bind, hold
from attnviz.ui.tour import tour

st.title("Positional encodings")
st.caption("Attention by itself ignores word order. Each tab shows one way of giving it positions; "
           "the Learned tab reads them from the model chosen in the sidebar.")
tour("positional")

# Each tab's main settings go in the link (?pe_tab=RoPE&pe_rope_m=7); only the open tab runs.
DEFAULTS = {"pe_maxlen": 128, "pe_dmodel": 128, "pe_base": 10000.0, "pe_rope_d": 64, "pe_rope_base": 10000.0,
            "pe_rope_m": 3, "pe_alibi_heads": 8, "pe_alibi_len": 16, "pe_alibi_causal": True,
            "pe_eq_text": "the dog bites the man"}
bind({"pe_tab": str, **{k: type(v) for k, v in DEFAULTS.items()}, "pe_eq_scheme": str})
for key, value in DEFAULTS.items():
    st.session_state.setdefault(key, value)
hold("pe_shift", "pe_pos")  # kept while a bad setting above hides them
lazy_tabs(list(TABS), "pe_tab", tuple(TABS.values()))  # only the open tab runs
