"""Ablation page: switch heads off and see what changes in the model's output."""
import numpy as np
import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.metrics.ablation import (attention_change, check_heads, cosine_distance, effect, effect_label,
                                      effect_name, top_tokens)
from attnviz.metrics.figures import head_grid, layer_lines
from attnviz.ui import metrics as aw
from attnviz.ui.cache import ablation_run, get_model
from attnviz.ui.figure import show_figure
from attnviz.ui.share import bind, from_link
from attnviz.ui.present import page_intro
from attnviz.ui.page import stop as stop_page
from attnviz.units import count_text

page_intro("Head ablation",
    "To test whether a head matters, switch it off: its output is replaced by zeros just before the layer's "
    "output projection, so the rest of the model runs as usual without it. (transformers' `head_mask` "
    "argument is silently ignored in version 5, so attnviz does this with a temporary hook.) The head's "
    "own attention weights do not change; what changes is everything after it: later layers' attention "
    "and the model's output."
)

result, request = aw.hf_inputs("Ablation")
n_layers, n_heads = result.n_layers, result.n_heads
names = {(l, h): f"L{l} H{h}" for l in range(n_layers) for h in range(n_heads)}
back = {v: k for k, v in names.items()}
bind({"ab_heads": list})  # the link carries the heads; the session keeps them per model
linked = from_link("ab_heads")
if linked is not None:
    aw.set_ablated_heads(back[v] for v in linked if v in back)
current = sorted(hd for hd in aw.ablated_heads() if hd in names)
st.session_state["ab_heads"] = [names[hd] for hd in current]


def _sync():
    aw.set_ablated_heads(back[v] for v in st.session_state["ab_heads"] if v in back)


def _add_layer():
    layer = st.session_state.get("ab_layer_pick")
    if layer is not None:
        aw.set_ablated_heads(aw.ablated_heads() | {(layer, h) for h in range(n_heads)})


def _clear():
    aw.set_ablated_heads(())


c1, c2, c3 = st.columns([4, 2, 1])
c1.multiselect("Heads to switch off", list(names.values()), key="ab_heads", on_change=_sync,
               placeholder="Choose heads, e.g. L0 H3", help="Layer L, head H, counted from 0. The choice is "
               "shared with the other pages, which mark these heads.")
with c2:
    st.selectbox("Add a whole layer", range(n_layers), index=None, key="ab_layer_pick",
                 placeholder="Pick a layer…", on_change=_add_layer)
c3.button("Clear", key="ab_clear", on_click=_clear, width="stretch")

heads = tuple(sorted(hd for hd in aw.ablated_heads() if hd in names))
loaded = get_model(request.model)
try:
    with st.spinner("Running the model…"):
        base = ablation_run(request, ())
        if heads:
            check_heads(heads, n_layers, n_heads)
            abl = ablation_run(request, heads)
except AttnvizError as e:
    st.warning(str(e))
    heads, abl = (), None

if not heads:
    st.info("Choose one or more heads above to see what switching them off changes, or rank every head below.")
else:
    st.markdown(f"**{len(heads)} head(s) off:** " + ", ".join(names[h] for h in heads))
    m1, m2 = st.columns(2)
    m1.metric("Cosine distance of the sentence embedding", f"{cosine_distance(base.embedding, abl.embedding):.5f}",
              help="The embedding as the model defines it: mean of the last hidden states over the tokens, "
                   "L2-normalised. 0 = unchanged, 1 = orthogonal.")
    if base.next_probs is not None or base.masked_probs:
        m2.metric(effect_label(base), f"{effect(base, abl):.4f}")
    if base.next_probs is not None:
        st.markdown("**Next-token prediction after the text**")
        b_top, a_top = top_tokens(base.next_probs, loaded.tokenizer), top_tokens(abl.next_probs, loaded.tokenizer)
        rows = [{"rank": i + 1, "full model": f"{bt} ({bp:.3f})", "with heads off": f"{at} ({ap:.3f})"}
                for i, ((bt, bp), (at, ap)) in enumerate(zip(b_top, a_top))]
        st.dataframe(rows, hide_index=True, width="stretch")
        changed = int(np.sum(base.argmax != abl.argmax))
        st.caption(f"The most likely next token changes at {changed} of {count_text(len(base.argmax))} positions.")
    for pos, probs in base.masked_probs.items():
        st.markdown(f"**Predictions for the mask at position {pos}**")
        b_top, a_top = top_tokens(probs, loaded.tokenizer), top_tokens(abl.masked_probs[pos], loaded.tokenizer)
        st.dataframe([{"rank": i + 1, "full model": f"{bt} ({bp:.3f})", "with heads off": f"{at} ({ap:.3f})"}
                      for i, ((bt, bp), (at, ap)) in enumerate(zip(b_top, a_top))], hide_index=True, width="stretch")
    first = min(l for l, _ in heads)
    if first == n_layers - 1:  # no later layer: the figure would be all zeros
        st.info(f"**Effect on later attention: none to show.** The first switched-off head is in layer {first}, "
                "the last one, so no later layer is left whose attention could react; its own weights are computed "
                "before its output is removed. The change shows only in the output above.")
    else:
        change = attention_change(base.attention, abl.attention)
        show_figure(layer_lines({"attention change": change}, title="How much each layer's attention moved",
                                ytitle="mean row distance (0–1)"), key="ab_layers")
        st.caption(f"Mean total-variation distance between the rows with and without the heads (0 = same). "
                   f"{'Layer 0 cannot' if first == 0 else f'Layers 0 to {first} cannot'} change (the first "
                   f"switched-off head is in layer {first}, and its weights are computed before its output is "
                   "removed); later layers react to the missing output.")
    if not (base.next_probs is not None or base.masked_probs):
        st.caption("This model has no language-model head here, so the effect is measured on its sentence "
                   "embedding" + (" and its later attention." if first < n_layers - 1 else "."))

st.subheader("Rank every head by its effect on this sentence")
n_total = n_layers * n_heads
st.markdown(f"Switches off each of the {n_total} heads alone and measures the {effect_name(base)}. "
            "Takes one forward pass per head.")
if st.button(f"Rank all {n_total} heads", key="ab_rank") or request in st.session_state.get("ab_rankings", {}):
    try:
        ranking = aw.rank_all_heads(request)
    except AttnvizError as e:
        st.warning(str(e))
        stop_page()
    fig = head_grid(ranking, title="Effect of switching off each head alone", colorbar="effect",
                    zmin=0.0, colorscale="Reds", fmt=".5f", ablated=set(heads))
    aw.clickable_head_grid(fig, "ab_grid")
    order = np.argsort(-ranking.ravel())[:10]
    st.markdown("**Largest effects:** " + ", ".join(
        f"L{i // n_heads} H{i % n_heads} ({ranking.ravel()[i]:.4g})" for i in order))
