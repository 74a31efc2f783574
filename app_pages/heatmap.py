"""Heatmap page: every head as thumbnails, one head in detail, and one token across heads."""
import streamlit as st

from attnviz.errors import BadInput
from attnviz.plotting import PALETTES
from attnviz.heatmap.figures import heatmap_figure
from attnviz.heatmap.raster import GridLayout, default_thumb, grid_csv
from attnviz.ui.cache import figure, grid_image
from attnviz.heatmap.figures import grid_figure, grid_frame
from attnviz.export import result_npz
from attnviz.types import SUMMED
from attnviz.ui.metrics import ablated_heads, ablation_note
from attnviz.ui.heatmap import head_numbers, token_focus
from attnviz.ui.figure import show_figure
from attnviz.ui.heads import clicked_head, head_picker
from attnviz.ui.share import bind
from attnviz.ui.present import presenting
from attnviz.ui.page import part
from attnviz.ui.page import stop as stop_page
from attnviz.ui.sidebar import require_result
from attnviz.ui import contrib as lens_ui
from attnviz.heatmap.views import PAIR_BLOCKS, colour_range, select_view

bind({"hm_stack": str, "hm_hide_special": bool, "hm_renorm": bool, "hm_scale": str, "hm_palette": str,
      "hm_block": str, "hm_focus": int})

BLOCK_NAMES = {"A→A": "sentence A → sentence A", "B→B": "sentence B → sentence B", "A→B": "sentence A → sentence B",
               "B→A": "sentence B → sentence A"}
STACK_LABELS = {"self": "self-attention", "decoder": "decoder self-attention", "cross": "cross-attention (decoder → encoder)"}

st.title("Attention heatmap")

result = require_result(lens=True)
if result.quantity == "weights":
    st.caption("Each cell is the softmax weight one token (a row, the query) puts on another token "
               "(a column, the key). Every row sums to 1.")
lens_ui.note(result)
what = lens_ui.label(result)
facts = result.facts
st.markdown(f"**{facts.name}** · `{facts.architecture}` · {facts.kind}"
            f"{' (causal: a token sees only itself and earlier tokens)' if facts.causal else ''} · "
            f"{result.n_layers} layers × " + (SUMMED if result.heads_summed else f"{result.n_heads} heads") + f" · d_model {facts.d_model} · "
            f"**{result.seq_len} tokens**")

st.session_state.setdefault("hm_stack", "self")
if result.stacks != ("self",):
    st.radio("Attention", result.stacks, format_func=lambda s: STACK_LABELS[s] if s != "self" else "encoder self-attention",
             key="hm_stack", horizontal=True)
else:
    st.session_state["hm_stack"] = "self"
which = st.session_state["hm_stack"]
attention, q_tokens, k_tokens = result.stack(which)
q_special, k_special = result.specials(which)
n_layers, n_heads = attention.shape[:2]

st.session_state.setdefault("hm_renorm", True)
with st.expander("Display options", expanded=False) if not presenting() else st.container(height=1, border=False):
    c1, c2, c3 = st.columns(3)
    with c1:
        st.toggle("Hide special tokens ([CLS], [SEP], …)", key="hm_hide_special")
        st.toggle("Renormalise rows after hiding", key="hm_renorm",
                  help="On: each visible row is rescaled to sum to 1 again. Off: rows show the original "
                       "weights, so they sum to less than 1 where special tokens took weight.")
    with c2:
        st.radio("Colour scale", ["linear", "clip", "log"], key="hm_scale", horizontal=True,
                 format_func={"linear": "linear", "clip": "clip at 99th pct", "log": "log10"}.get,
                 help="Special tokens often take most of the weight and wash out the rest: clip or log "
                      "shows the smaller weights. Hover always shows the exact weight.")
        st.selectbox("Palette", list(PALETTES), key="hm_palette")
    with c3:
        if result.is_pair and which == "self":
            st.radio("Sentence-pair block", list(PAIR_BLOCKS), key="hm_block", horizontal=True,
                     help="A→B: rows of sentence A, columns of sentence B.")
block = st.session_state.get("hm_block", "all") if (result.is_pair and which == "self") else "all"
hide = st.session_state.get("hm_hide_special", False)
renorm = st.session_state.get("hm_renorm", True)
scale = st.session_state.get("hm_scale", "linear")
palette = PALETTES[st.session_state.get("hm_palette", next(iter(PALETTES)))]


# --- the head grid, one head and the token focus: rerun alone when the head changes ---------------
@part
def heads_view() -> None:
    """Every head, the chosen head in detail and the token focus. A new head (picked in its box or clicked in the
    grid), a new focus token or the lines view's checkbox reruns only this part: the title, the display options and
    the sidebar are neither run nor sent again, and a figure that did not change (the head's heatmap when only the
    token changed) is sent as a reference to the copy the browser already holds."""
    clicked = clicked_head("hm_grid")
    if clicked:
        st.session_state["layer"], st.session_state["head"] = clicked
    ablated = ablated_heads()
    # --- every head -------------------------------------------------------------------------
    layer, head = head_picker(n_layers, n_heads, "hm", columns=st.columns([1, 1, 4])[:2] if presenting() else None,
                              heads_summed=result.heads_summed)
    st.subheader("Every layer, its heads summed" if result.heads_summed else "Every head")
    grid_col, grid_text = st.columns([3, 1])
    with grid_text:
        st.markdown(
            ("One thumbnail per layer, its heads summed (ALTI has one map per layer); rows are layers (0 = nearest "
             "the input). Each thumbnail is coloured relative to its own largest value, so faint layers still show "
             "their shape. **Click a thumbnail** to open that layer below; the open layer has a red frame.")
            if result.heads_summed else
            "One thumbnail per head: rows are layers (0 = nearest the input), columns are heads. "
            "Each thumbnail is coloured relative to its own largest weight, so faint heads still "
            "show their shape. **Click a thumbnail** to open that head below; the open head has a red "
            "frame.")
        if ablated:
            st.caption(ablation_note("Grey frames mark", ablated))
        st.caption("Common shapes: a vertical stripe (everyone attends to one token, often [CLS] or "
                   "[SEP]), a diagonal (each token attends to itself), a line just off the diagonal "
                   "(previous or next token), a blur (broad attention).")
    with grid_col:
        layout = GridLayout(n_layers, n_heads, default_thumb(n_layers, n_heads, attention.shape[2]), 2)
        png = grid_image(attention, layout.n_layers, layout.n_heads, layout.thumb, layout.gap, palette)
        # the same figure for every head (cached without the weights, which the cache would keep alive), the open
        # head's frame drawn over it, its numbers made from this result when exported
        show_figure(figure(grid_figure, png, layout, ablated=tuple(sorted(ablated)), summed=result.heads_summed),
                    key="hm_grid", name="all-heads", on_select="rerun", selection_mode="points", exports=False,
                    shapes=[grid_frame(layout, layer, head)],
                    numbers=lambda: grid_csv(attention, q_tokens, layout.thumb, k_tokens), in_place=True)

    # --- one head ---------------------------------------------------------------------------
    head_name = result.head_name(head)
    st.subheader(f"Layer {layer}, " + (f"{head_name} (ALTI)" if result.heads_summed else head_name)
                 + (f" · block {BLOCK_NAMES[block]}" if block != "all" else "")
                 + (" (ablated elsewhere: weights shown are its own)" if (layer, head) in ablated else ""))
    try:
        view = select_view(attention[layer, head], q_special, result.segment_ids if which == "self" else None,
                           hide_special=hide, renormalise=renorm, block=block,
                           key_special_mask=k_special)
    except BadInput as e:
        st.warning(str(e))
        stop_page()
    zmin, zmax, log_floor = colour_range(view.values, scale)
    fig_col, info_col = st.columns([3, 1])
    with fig_col:
        show_figure(
            figure(heatmap_figure, view.values, q_tokens, k_tokens, rows=view.rows, cols=view.cols,
                           zmin=zmin, zmax=zmax, colorscale=palette, log_floor=log_floor,
                           colorbar_title=("renormalised " if view.renormalised else "") + what,
                           causal=which == "decoder" or (which == "self" and facts.causal)),
            key="hm_heatmap", name=f"attention-layer{layer}-head{head}" + (f"-{block}" if block != "all" else ""),
            in_place=True)
    with info_col:
        head_numbers(attention[layer, head], view, block, what, k_special, hide)
        st.markdown("Read a **row** to see what that token gathers information from; read a **column** "
                    "to see who gathers from that token.")
        if hide:
            st.caption("Special tokens are hidden. " + ("Rows are renormalised to sum to 1 over the visible tokens."
                                                       if view.renormalised else "Rows are not renormalised: they sum to "
                                                       "less than 1 where special tokens took weight."))
        if scale != "linear":
            st.caption("Colours are " + ("clipped at the 99th percentile: larger weights share the top colour"
                                         if scale == "clip" else "spaced by log10 of the weight, so small weights get "
                                         "distinct colours") + "; hover and exports show the exact weight.")
        if attention.shape[2] > 160:
            st.caption("Long input: the axes label every few tokens; hover names every token.")

    # --- token focus ------------------------------------------------------------------------
    token_focus(result, which, layer, head, head_name, palette, what, ablated, hide, renorm)


heads_view()

if not presenting():
    st.download_button("Download every layer and head (.npz)", lambda: result_npz(result),
                       file_name="attention.npz", mime="application/octet-stream", key="hm_npz",
                       on_click="ignore", icon=":material/download:",
                       help="attention (layer, head, query, key) float32, tokens, ids, masks and model facts; "
                            "load with numpy.load or attnviz.export.load_result_npz")
