"""The lens (the sidebar's "Show" control: attention weights, value-weighted attention or ALTI
contributions on every view that opts in) and the Contributions page's Streamlit parts."""
from __future__ import annotations

import streamlit as st

from attnviz.contrib.compute import DESCRIPTIONS, LABELS, QUANTITIES, lens
from attnviz.errors import AttnvizError
from attnviz.types import AttentionResult, Request
from attnviz.ui.share import current_page, link_note

LENS = "lens"  # session key of the sidebar control (shared in the URL)
TRAINED_CONTRIB = "training_contributions"  # Contributions of the stored toy-model frame, when known
LENS_PAGES = ("heatmap", "entropy", "rollout", "head_roles", "generate")  # the pages that read the control
PAGES_WITH_LENS = "the heatmap, entropy, rollout, head-role and generate pages"
OPTIONS = {
    "weights": "attention weights",
    "value-weighted": "value-weighted (‖α f(x)‖)",
    "ALTI": "ALTI contributions",
}


def control() -> None:
    """The sidebar's lens radio. A value it does not know (a hand-edited link) is read without regard to case
    (lens=alti is ALTI); otherwise the view shows attention weights and says so."""
    lens = st.session_state.get(LENS)
    if lens not in QUANTITIES:
        known = {q.lower(): q for q in QUANTITIES}
        fixed = known.get(str(lens).strip().lower()) if lens is not None else None
        if fixed is None and lens is not None:
            link_note(f"Show {str(lens)[:40]!r} in the link is not one of "
                      f"{', '.join(OPTIONS[q] for q in QUANTITIES)}: this view shows attention weights.")
        st.session_state[LENS] = fixed or "weights"
    used = current_page() in LENS_PAGES
    st.radio("Show", QUANTITIES, key=LENS, format_func=OPTIONS.get, disabled=not used,
             help=("" if used else f"Not used on this page: it applies to {PAGES_WITH_LENS}. ")
             + "What the heatmap, grid, token focus, shaded text, entropy, rollout, head roles and the generated "
               "text's shading are computed from. Weights are what the softmax gives; value-weighted multiplies each "
               "weight by the length of the value vector it moves; ALTI measures each token's share of the layer's "
               "output with the residual and norm included (one map per layer).")


def quantity() -> str:
    q = st.session_state.get(LENS, "weights")
    return q if q in QUANTITIES else "weights"


def apply(result: AttentionResult, request: Request | None) -> AttentionResult:
    """`result` (of `request`; None: the trained toy model's stored frame) seen through the sidebar's lens, or
    the weights after a plain message saying why the lens cannot apply (the model's blocks are not covered, a toy
    frame without weights)."""
    q = quantity()
    if q == "weights":
        return result
    try:
        if request is None:
            contrib = st.session_state.get(TRAINED_CONTRIB)
            if contrib is None:
                raise AttnvizError("Contributions need the model's weights at this step, and the training page "
                                   "keeps only the final step's: pick the last frame there, or show weights.")
            return lens(result, contrib, q)
        from attnviz.ui.cache import lensed_result

        with st.spinner(f"Computing {OPTIONS[q]} for every layer…"):
            return lensed_result(request, q)
    except AttnvizError as e:
        st.info(f"{e} Showing attention weights instead.")
        return result


def label(result) -> str:
    """What one number of the result's maps is called, for colour bars and hovers."""
    return LABELS.get(getattr(result, "quantity", "weights"), "attention weight")


def note(result) -> None:
    """One line saying what the page shows when it is not the weights."""
    q = getattr(result, "quantity", "weights")
    if q != "weights":
        st.info(f"**Showing {OPTIONS[q]}**, not attention weights: {DESCRIPTIONS[q]}. Switch with **Show** in "
                "the sidebar.", icon=":material/scale:")


def weights_only_note() -> None:
    """For pages that always show weights, when the sidebar's lens asks for something else."""
    if quantity() != "weights":
        st.caption(f"This page shows attention weights: the sidebar's **Show: {OPTIONS[quantity()]}** applies to "
                   f"{PAGES_WITH_LENS}.")


def model_and_contributions(model_key: str, text: str):
    """(AttentionResult, Contributions) of a packaged model on a text, or (None, None) after a plain message."""
    from attnviz.ui.cache import get_contributions, get_result

    request = Request(model_key, text)
    try:
        with st.spinner(f"Running {model_key} and working out what every block moves…"):
            return get_result(request), get_contributions(request)
    except AttnvizError as e:
        st.warning(str(e))
        return None, None
