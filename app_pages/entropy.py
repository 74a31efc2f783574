"""Entropy page: how focused or spread out each head's attention is."""
import numpy as np
import streamlit as st

from attnviz.metrics.entropy import head_mean, padding_positions
from attnviz.metrics.figures import head_grid, token_bars
from attnviz.ui import metrics as aw
from attnviz.ui.heads import head_picker
from attnviz.ui.sidebar import require_result
from attnviz.ui import contrib as lens_ui
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind
from attnviz.ui.present import page_intro
from attnviz.ui.page import stop as stop_page
from attnviz.types import SUMMED
from attnviz.units import count_text

page_intro("Attention entropy",
    "Each query row of a head is a probability distribution over the keys it may look at. Its **entropy** "
    "H = −Σ p log p (in nats) measures how spread out that distribution is. **Low** entropy means the head "
    "is focused: most weight lands on one or a few tokens (a previous-token head, a [SEP] sink). **High** "
    "entropy means broad, bag-of-words averaging. Dividing by log(number of keys the row may see) gives a "
    "**normalised** entropy between 0 (all weight on one key) and 1 (uniform); for causal models each row "
    "is divided by its own key count, and a row that sees a single key scores 0."
)

result = require_result(lens=True)
lens_ui.note(result)
analysis = aw.analysis_of_sidebar(result=result)
ent = analysis.entropy
ablated = aw.ablated_heads()

bind({"en_unit": str, "en_special": bool, "en_layer": int, "en_head": int})
st.session_state.setdefault("en_special", True)
summed = result.heads_summed  # ALTI: one map per layer
c1, c2 = st.columns(2)
unit = c1.radio("Scale", ["normalised (0–1)", "nats"], horizontal=True, key="en_unit",
                help="Normalised entropy compares heads fairly across rows of different lengths.")
include_special = c2.toggle("Include [CLS]/[SEP] rows in the head means", key="en_special",
                            help="Special tokens often attend in their own way; leave them out to see the words only.")
per_row = ent["normalised"] if unit.startswith("normalised") else ent["nats"]
valid = ~padding_positions(result.tokens, result.special_mask)
if not include_special:
    valid = valid & ~np.asarray(result.special_mask, dtype=bool)
if not valid.any():
    st.warning("The text has only special tokens, so there is no word row to average. Include the special rows.")
    stop_page()
means = head_mean(per_row, valid)
label = "normalised entropy" if unit.startswith("normalised") else "entropy (nats)"
zmax = 1.0 if unit.startswith("normalised") else float(np.log(result.seq_len)) or 1.0

grid = st.container()  # above the picker: the grid is the same figure whichever head the bars show, so a head
# picked below neither rebuilds nor re-sends it (it frames no head: the bars' title names theirs)
left, right = st.columns([2, 3])
with left:
    st.markdown(f"**All {'layers' if summed else 'heads'}, sortable** (click a column header)")
    table = aw.head_table({label: means})
    if summed:  # and no ablated column: a layer's summed heads are not switched off one by one
        table["head"] = SUMMED
    else:
        table["ablated"] = [(l, h) in ablated for l, h in zip(table["layer"], table["head"])]
    st.dataframe(table.sort_values(label), hide_index=True, width="stretch",
                 height=min(420, 38 + 35 * len(table)),  # a short table (one row per layer) ends with its rows
                 column_config={"layer": st.column_config.NumberColumn(width=50),  # every column in view
                                "head": st.column_config.Column(width=110 if summed else 50),
                                label: st.column_config.NumberColumn(format="%.4f", width=140),
                                "ablated": st.column_config.CheckboxColumn(width=70)})
with right:
    st.markdown(f"**Entropy of every token's row in one {'layer' if summed else 'head'}**")
    sel_layer, sel_head = head_picker(result.n_layers, result.n_heads, "en", write_back=False, heads_summed=summed)
    values = per_row[sel_layer, sel_head]
    bars = token_bars(values, result.tokens, ytitle=label, special_mask=result.special_mask,
                      title=f"{label} per query token · layer {sel_layer}, {result.head_name(sel_head)}")
    if unit.startswith("normalised"):
        bars.update_yaxes(range=[0, 1.02])
    show_figure(bars, key="en_bars")
    st.caption(f"{'Layer' if summed else 'Head'} mean: {means[sel_layer, sel_head]:.3f}. Light bars are special "
               f"tokens. Uniform attention over n keys has entropy log n ({np.log(result.seq_len):.2f} nats for all "
               f"{count_text(result.seq_len)} tokens); attention on one key has 0.")
    if st.button(f"Open this {'layer' if summed else 'head'} on the heatmap page", key="en_open"):
        aw.open_head(sel_layer, sel_head)
with grid:
    fig = head_grid(means, title=f"Mean {label} per {'layer, heads summed' if summed else 'head'} · "
                                 f"{count_text(result.seq_len)} tokens", colorbar=label, zmin=0.0, zmax=zmax,
                    colorscale="Viridis", ablated=ablated, summed=summed)
    st.caption("Dark = focused, bright = broad. Click a cell to open that " + ("layer" if summed else "head")
               + " on the heatmap page; pick one below to see its rows."
               + (" Red crosses mark ablated heads (their own weights are unchanged by ablation)." if ablated else ""))
    aw.clickable_head_grid(fig, "en_grid")
