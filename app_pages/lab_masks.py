"""Lab 4: causal and padding masks on a small padded batch, fully masked rows, and the leak."""
import numpy as np
import pandas as pd
import streamlit as st

from attnviz.errors import BadInput
from attnviz.lab.figures import bars, matrix_heatmap
from attnviz.lab.masks import MAX_BATCH, MAX_LEN, fully_masked_row_behaviours, future_leak, masked_batch
from attnviz.ui.lab import int_list_input, keep_choice, lab_header, lecture_nav, stop_page
from attnviz.ui.page import part
from attnviz.ui.figure import show_figure
from attnviz.ui.numbers import number_box
from attnviz.ui.share import bind

bind({"masks_lengths": str, "masks_padto": int, "masks_kind": str, "masks_seq": int})
KINDS = ["causal + padding", "causal", "padding", "none"]

PAGE = "app_pages/lab_masks.py"
lab_header(PAGE, """
A mask decides which keys a query may see. Hidden scores are set to **−∞** before the softmax, so
e^−∞ = 0 gives them exactly zero weight and the visible keys share the whole row.
A **causal** mask hides the future (key j > query i), so a language model cannot read the token it must predict.
A **padding** mask hides the filler tokens added so that sequences of different lengths fit in one batch.
A decoder in a batch needs both: a key is visible only if it is in the past **and** real.
""")


NUMBERS_UP_TO = 6  # the longest padded length whose scores and weights are printed in their cells


@part
def lab() -> None:
    """Everything below the header reruns alone when one of its controls changes."""
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        lengths = int_list_input("Lengths of the sequences in the batch", "5, 3, 0", "masks_lengths",
                                 help=f"Up to {MAX_BATCH} sequences, comma-separated. A length of 0 is an empty "
                                      "sequence: all its rows are fully masked.")
    with c2:
        pad_to = number_box(st, "Padded length", 1, MAX_LEN, 5, key="masks_padto",
                                 help="The batch is padded to this length; no sequence may be longer.")
    with c3:
        keep_choice("masks_kind", KINDS, KINDS[0])
        kind = st.radio("Mask", KINDS, key="masks_kind")
    if lengths is None:
        stop_page(PAGE)
    try:
        b = masked_batch(lengths, int(pad_to), causal="causal" in kind, padding="padding" in kind)
    except BadInput as e:
        st.warning(str(e))
        stop_page(PAGE)

    keep_choice("masks_seq", range(len(lengths)), 0)
    seq = st.radio("Sequence", range(len(lengths)), horizontal=True, key="masks_seq",
                   format_func=lambda i: f"sequence {i + 1} (length {lengths[i]})")
    n = int(pad_to)
    labels = [f"t{j + 1}" + ("" if j < lengths[seq] else " pad") for j in range(n)]
    a, m, w = st.columns(3)
    with a:
        show_figure(matrix_heatmap(b.mask[seq].astype(float), labels, labels, title="Mask (1 = may attend)",
                                   colorscale="Greys", zmin=0, zmax=1.6, digits=0), key="masks_fig_mask", toolbar=False)
    numbers = n <= NUMBERS_UP_TO  # three figures side by side: wider inputs leave no room for a number in a cell
    with m:
        show_figure(matrix_heatmap(b.masked_scores[seq], labels, labels, title="Scores after masking",
                                   colorscale="Greys", digits=2, show_text=numbers), key="masks_fig_scores", toolbar=False)
    with w:
        show_figure(matrix_heatmap(b.weights[seq], labels, labels, title="Weights (rows sum to 1 or 0)",
                                   zmin=0, zmax=1, digits=3, show_text=numbers), key="masks_fig_weights", toolbar=False)
    st.caption("Scores are random but fixed (a seeded example); a masked score is −∞, drawn as a blank cell"
               + (" and printed -inf." if numbers else f". Hover a cell for its number: they are printed up to a padded "
                                                      f"length of {NUMBERS_UP_TO}.")
               + " Rows are queries, columns keys.")

    empty = [(s_, i) for s_, i in b.fully_masked_rows if s_ == seq]
    if empty:
        st.info(f"**{len(empty)} fully masked row(s) here** (query rows with no visible key). A plain softmax would "
                "compute 0 / 0 = NaN and the NaN would spread through every later layer. This lab's softmax "
                "returns **all-zero weights** for such a row (so its output is the zero vector), which is why "
                "those rows sum to 0 instead of 1.")
    with st.expander("How three implementations treat a row whose keys are all masked"):
        rows = fully_masked_row_behaviours(4)
        st.table(pd.DataFrame({k: [f"{x:.4f}" if np.isfinite(x) else "nan" for x in v] for k, v in rows.items()},
                              index=[f"key {j + 1}" for j in range(4)]).T)
        st.markdown("Filling with −10⁹ instead of −∞ avoids the NaN but spreads the weight **uniformly over the "
                    "padding**, which is just as wrong. A plain `torch.softmax` over such a row gives NaN too; "
                    "torch 2.13's `scaled_dot_product_attention` returns zeros, like this lab. Zeroing the row, or "
                    "never letting a row be empty, is the safe choice.")

    st.subheader("The mistake: forgetting the causal mask")
    st.markdown("""
    Train a decoder without the causal mask and position i can read position i + 1, the very token it is asked to
    predict: training looks great, generation fails. Below, only the **last** token of a 6-token sequence is
    changed. With the mask, only the last output moves. Without it, every earlier output moves too: the future
    has leaked into the past.
    """)
    leak = future_leak(6)
    pos = [f"t{j + 1}" for j in range(6)]
    l, r = st.columns(2)
    with l:
        show_figure(bars(pos, {"with causal mask": leak.change_with_mask, "without mask": leak.change_without_mask},
                         "How far each output moves when only t6 changes", "‖Δ output‖", digits=3),
                    key="masks_fig_leak", toolbar=False)
    with r:
        show_figure(bars(pos, {"without mask": leak.weight_on_future}, "Weight each query puts on future tokens",
                         "weight on keys j > i", digits=3, y_range=(0, 1.1)), key="masks_fig_future", toolbar=False)
    lecture_nav(PAGE)


lab()
