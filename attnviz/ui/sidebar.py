"""The shared sidebar (model, text, optional second sentence) and the current result."""
from __future__ import annotations

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.examples import examples, long_text
from attnviz.models.registry import DEFAULT_MODEL, PACKAGED, package_dir
from attnviz.types import Request
from attnviz.ui.page import stop as stop_page
from attnviz.units import count_text

OTHER = "other"  # model picker entry for a hub id or folder typed by the user
TRAINED = "trained"  # model picker entry for a frame stored by the training page
TRAINED_KEY = "training_result"  # session key of that AttentionResult
LONG = "A long text (~512 tokens)"
MAX_TEXT_CHARS = 20_000  # what the text box holds; the Long inputs page reads longer texts from a file
_CUT = "_sidebar_text_cut"  # (characters given, the text kept) after a text longer than the box was cut


def installed_models() -> list[str]:
    """Keys of the packaged models installed here (the model pickers' first entries)."""
    return [k for k, s in PACKAGED.items() if package_dir(s.package)]


def model_label(key: str) -> str:
    """What a model picker shows for a packaged model's key (its label), or the key itself."""
    return PACKAGED[key].label if key in PACKAGED else key


def _model_options() -> dict[str, str]:
    opts = {k: PACKAGED[k].label for k in installed_models()}
    opts[OTHER] = "Other: a HuggingFace hub id or a local folder…"
    if st.session_state.get(TRAINED_KEY) is not None:
        opts[TRAINED] = "Trained toy model (stored on the Training page)"
    return opts


def _apply_example():
    choice = st.session_state.get("example")
    if choice == LONG:
        st.session_state["text"], st.session_state["text_pair"] = long_text(), ""
    else:
        for a, b in examples():
            if a == choice:
                st.session_state["text"], st.session_state["text_pair"] = a, b or ""
                st.session_state["use_pair"] = bool(b)


_QUEUED_TEXT = "_queued_text"


def queue_text(text: str) -> None:
    """Make `text` the sidebar's text (a single sentence) from the next run on: the text box is
    drawn before any page, so a page cannot change it in the same run."""
    st.session_state[_QUEUED_TEXT] = text


_REPLACED = "_sidebar_replaced"  # {"previous": settings, "text": the text put in, "note": what happened, "toast": bool}


def replace_text(text: str, note: str, words: bool | None = None) -> None:
    """Like queue_text, for a page that opens a view on a text of its own (and, with `words`, sets the Word level
    switch): the sidebar then says so (`note`, a sentence naming what replaced the text) and offers a button back
    to the text, sentence pair and Word level it had."""
    from attnviz.ui import words as word_level

    ss = st.session_state
    earlier = ss.get(_REPLACED)
    previous = earlier["previous"] if earlier and ss.get("text") == earlier["text"] else {
        "text": ss.get("text"), "text_pair": ss.get("text_pair", ""), "use_pair": bool(ss.get("use_pair", False)),
        word_level.WORDS: bool(ss.get(word_level.WORDS, False))}
    if words is not None and bool(words) != previous[word_level.WORDS]:
        note += f" Word level is now {'on' if words else 'off'}."
        word_level.queue(bool(words))
    ss[_REPLACED] = {"previous": previous, "text": text, "note": note, "toast": True}
    queue_text(text)


def _restore_replaced() -> None:
    replaced = st.session_state.pop(_REPLACED, None)
    if replaced:
        st.session_state.update(replaced["previous"])


def _keep_replaced() -> None:
    st.session_state.pop(_REPLACED, None)


def _replaced_notice() -> None:
    """Under the text box: what a page put there, with the way back (until the text is edited or kept)."""
    replaced = st.session_state.get(_REPLACED)
    if not replaced:
        return
    if st.session_state.get("text") != replaced["text"]:  # the text was edited since: the offer lapses
        del st.session_state[_REPLACED]
        return
    if replaced["toast"]:
        replaced["toast"] = False
        st.toast(replaced["note"], icon=":material/swap_horiz:")
    with st.container(border=True):
        st.caption(replaced["note"])
        back, keep = st.columns([3, 2])
        back.button("Back to my text", key="sidebar_restore_text", on_click=_restore_replaced,
                    icon=":material/undo:", help="The text, sentence pair and Word level from before.")
        keep.button("Keep this", key="sidebar_keep_text", on_click=_keep_replaced)


def render() -> None:
    first_a, _ = examples()[0]
    if _QUEUED_TEXT in st.session_state:
        st.session_state["text"] = st.session_state.pop(_QUEUED_TEXT)
        st.session_state["use_pair"] = False
    st.session_state.setdefault("model_choice", DEFAULT_MODEL)
    st.session_state.setdefault("text", first_a)
    st.session_state.setdefault("text_pair", "")
    st.session_state.setdefault("use_pair", False)
    st.session_state.setdefault("present", False)
    text = st.session_state["text"]
    if isinstance(text, str) and len(text) > MAX_TEXT_CHARS:  # from a link or a slide: the box would show it
        # all but hand the pages only its first MAX_TEXT_CHARS characters (Streamlit cuts the value it gets back)
        st.session_state["text"] = text[:MAX_TEXT_CHARS]
        st.session_state[_CUT] = (len(text), st.session_state["text"])
    with st.sidebar:
        st.markdown("### Model and text")
        opts = _model_options()
        if st.session_state.get("model_choice") not in opts:
            st.session_state["model_choice"] = DEFAULT_MODEL
        st.selectbox("Model", list(opts), format_func=opts.get, key="model_choice",
                     help="The packaged models work offline. 'Other' loads any HF hub id or local folder.")
        if st.session_state["model_choice"] == OTHER:
            st.text_input("Hub id or folder", key="custom_model", placeholder="bert-base-uncased or /path/to/model",
                          help="Loaded with eager attention; never with remote code. Offline, only folders "
                               "and models already in the HF cache work.")
        st.selectbox("Example", [a for a, _ in examples()] + [LONG], index=None, key="example",
                     placeholder="Pick an example sentence…", on_change=_apply_example)
        st.text_area("Text", key="text", height=110, max_chars=MAX_TEXT_CHARS)
        cut = st.session_state.get(_CUT)
        if cut and cut[1] == st.session_state["text"]:
            st.caption(f"The text given had {cut[0]:,} characters; this box holds "
                       f"{MAX_TEXT_CHARS:,}, so only the first {MAX_TEXT_CHARS:,} are used. The **Long inputs** page "
                       "reads longer texts from a file, or its bundled text.")
        elif cut:
            del st.session_state[_CUT]
        _replaced_notice()
        st.toggle("Sentence pair", key="use_pair", help="Feed a second sentence as segment B ([SEP]-separated).")
        if st.session_state["use_pair"]:
            st.text_input("Second sentence (B)", key="text_pair")
        from attnviz.ui import contrib, words

        contrib.control()
        words.control()
        st.toggle("Presentation mode", key="present",
                  help="Large fonts and figures, fewer controls: for a projector (1280 x 720).")


def using_trained() -> bool:
    """True when the sidebar shows the toy model stored by the training page."""
    return st.session_state.get("model_choice") == TRAINED and st.session_state.get(TRAINED_KEY) is not None


def use_trained(result, contributions=None) -> None:
    """Store a trained model's AttentionResult (and its Contributions when the step's weights are
    known) and select it in the sidebar (a widget callback)."""
    from attnviz.ui.contrib import TRAINED_CONTRIB

    st.session_state[TRAINED_KEY] = result
    st.session_state[TRAINED_CONTRIB] = contributions
    st.session_state["model_choice"] = TRAINED


def model_key() -> str:
    choice = st.session_state.get("model_choice", DEFAULT_MODEL)
    if choice == OTHER:
        return (st.session_state.get("custom_model") or "").strip()
    return choice


def sidebar_request(max_tokens: int | None = None) -> Request:
    """The Request of the sidebar's model, text and second sentence (or None), under `max_tokens`."""
    pair = st.session_state.get("text_pair") if st.session_state.get("use_pair") else None
    return Request(model_key(), st.session_state.get("text", ""), pair or None, max_tokens)


def current_result(max_tokens: int | None = None, lens: bool = False):
    """The AttentionResult of the sidebar's model and text, or None after showing a plain
    message (the caller then stops). Loads the model with a progress bar on first use. With `lens`,
    seen through the sidebar's Show control (weights, value-weighted or ALTI)."""
    from attnviz.ui import contrib, words
    from attnviz.ui.cache import get_result

    key = model_key()
    if key == TRAINED:
        result = st.session_state.get(TRAINED_KEY)
        if result is None:
            st.info("No trained model is stored: train one on the Training page and press "
                    "'Use this step on the other pages'.")
            return None
        st.caption(f"Showing the trained toy model **{result.facts.name}** on its probe input; "
                   "the sidebar's text is not used.")
        if not lens:
            words.pieces_only_note()
            return result
        return words.apply(contrib.apply(result, None), None)
    request = sidebar_request(max_tokens)
    if not key:
        st.info("Type a HuggingFace hub id or a local model folder in the sidebar.")
        return None
    try:
        from attnviz.ui.jobs import load_model

        load_model(key)  # a progress bar with the time left while it loads
        with st.spinner("Computing attention…"):
            result = get_result(request)
    except AttnvizError as e:
        st.warning(str(e))
        return None
    if result.truncation and result.truncation.truncated:
        t = result.truncation
        context = result.facts.max_positions
        if context and context > t.max_tokens:  # the app's dense limit, not the model's
            st.info(f"The text is {t.n_tokens_requested:,} tokens long. This page keeps every head's full map, so it "
                    f"reads at most {count_text(t.max_tokens)} tokens ({result.facts.name} itself takes {context:,}): the last "
                    f"{t.n_dropped:,} were dropped. The **Long inputs** page reads the whole text, computing each "
                    "map only when you look at it.")
        else:
            st.info(f"The text is {count_text(t.n_tokens_requested)} tokens long; the model takes at most {t.max_tokens}, "
                    f"so the last {count_text(t.n_dropped)} tokens were dropped.")
    if lens:
        return words.apply(contrib.apply(result, request), request)
    contrib.weights_only_note()
    words.pieces_only_note()
    return result


def require_result(max_tokens: int | None = None, lens: bool = False):
    """current_result(), stopping the page when there is none."""
    result = current_result(max_tokens, lens)
    if result is None:
        stop_page()
    return result


def current_contributions():
    """Contributions of the sidebar's model and text (the toy model's stored ones), or None after a
    plain message saying why there are none."""
    from attnviz.ui.contrib import TRAINED_CONTRIB

    if using_trained():
        c = st.session_state.get(TRAINED_CONTRIB)
        if c is None:
            st.info("Contributions need the toy model's weights at the stored step, and a training run keeps only "
                    "its final weights: store the last frame on the Training page.")
        return c
    from attnviz.ui.cache import get_contributions

    try:
        with st.spinner("Working out what every block moves…"):
            return get_contributions(sidebar_request())
    except AttnvizError as e:
        st.info(str(e))
        return None
