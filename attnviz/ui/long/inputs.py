"""Long inputs, the input section: the sidebar's model and how far it reads, the text (the sidebar's, an uploaded
file or the bundled one) and the length limit with the memory the recording takes."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from attnviz.errors import AttnvizError, BadInput
from attnviz.types import LoadedModel
from attnviz.ui.metrics import switch_to_causal_button
from attnviz.units import human_bytes

SOURCES = ("The sidebar's text", "A file (.txt, .md)", "Bundled long text (~5,000 words)")
LENGTHS = (512, 1024, 2048, 4096, 8192)
DENSE_LIMIT = 512  # the dense pages' limit (a model without recorded q/k support stays there)
BUNDLED = Path(__file__).resolve().parents[3] / "assets" / "long" / "attention-notes.txt"
TAB = "lg_tab"  # the open tab of the views below the head
TABS = ("Token focus", "Top-k lines", "Distance", "Sinks and windows")
KEYS = {"lg_source": str, "lg_len": int, "lg_how": str, TAB: str,  # the page's settings kept in the link
        "lg_zq": int, "lg_zk": int, "lg_zsize": int, "lg_fq": int, "lg_k": int, "lg_kspan": int, "lg_kq": int}


def model() -> tuple[str, LoadedModel]:
    """(model key, LoadedModel) of the sidebar, or stop the page with a plain message."""
    from attnviz.ui.metrics import sidebar_model

    request, loaded = sidebar_model("The Long inputs page")
    return request.model, loaded


def context_note(loaded) -> None:
    """Say how far the model reads; on a short-context model (MiniLM: 512) offer SmolLM2 (8,192)."""
    from attnviz.extract import token_limit

    cap = token_limit(loaded, LENGTHS[-1])
    if cap <= DENSE_LIMIT:
        st.info(f"**{loaded.facts.name}** reads at most **{cap:,} positions** (its table of learned position "
                "embeddings has no more rows), so on it this page records at most that many tokens. For thousands "
                "of tokens use a long-context causal model: the packaged SmolLM2-135M reads 8,192.",
                icon=":material/info:")
        switch_to_causal_button("lg_switch")


def read_upload(name: str, data: bytes) -> str:
    """The text of an uploaded .txt/.md file; BadInput when it is not text (binary bytes, not UTF-8)."""
    if not data.strip():
        raise BadInput(f"'{name}' is empty: upload a .txt or .md file with some text in it.")
    if b"\x00" in data[:65536]:
        raise BadInput(f"'{name}' is not a text file (it holds binary bytes). Upload a plain .txt or .md file.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"'{name}' is not UTF-8 text. Save it as a plain UTF-8 .txt or .md file and upload it again.")


def text_source() -> str | None:
    """The text chosen on the page, or None after a plain message."""
    source = st.radio("Text", SOURCES, key="lg_source", horizontal=True,
                      help="The sidebar's box holds up to 20,000 characters; a file or the bundled text can be longer.")
    if source == SOURCES[0]:
        return st.session_state.get("text", "")
    if source == SOURCES[2]:
        try:
            return BUNDLED.read_text(encoding="utf-8")
        except OSError:
            st.warning(f"The bundled text is missing ({BUNDLED.name}); reinstall attnviz or upload a file.")
            return None
    up = st.file_uploader("A text file (.txt or .md)", type=["txt", "md"], key="lg_upload")
    if up is None:
        st.info("Choose a .txt or .md file, or pick the bundled long text.")
        return None
    try:
        return read_upload(up.name, up.getvalue())
    except BadInput as e:
        st.warning(str(e))
        return None


def length_picker(loaded, text: str, container=None) -> tuple[int, int] | None:
    """(length limit, tokens that will be recorded) with the memory they take, or None after a plain
    message (empty text, a length that does not fit in free memory)."""
    from attnviz.extract import encode, token_limit
    from attnviz.long.memory import check_long_fits, long_memory_parts

    facts = loaded.facts
    cap = token_limit(loaded, LENGTHS[-1])  # the model's positions and its tokenizer's limit
    options = [n for n in LENGTHS if n < cap] + [min(cap, LENGTHS[-1])]
    if st.session_state.get("lg_len") not in options:
        st.session_state["lg_len"] = max([n for n in options if n <= 2048] or options[:1])
    c = container or st
    if len(options) == 1:
        limit = options[0]
        c.caption(f"Length limit: **{limit:,} tokens**, all that {facts.name} reads.")
    else:
        limit = c.select_slider("Length limit (tokens)", options=options, key="lg_len", format_func=lambda n: f"{n:,}",
                                help=f"The first tokens of the text up to this limit are recorded ({facts.name} "
                                     f"reads at most {cap:,}).")
    try:
        e = encode(loaded, text, max_tokens=limit)
    except AttnvizError as err:
        st.warning(str(err))
        return None
    n = len(e.ids)
    d_ff = getattr(loaded.model.config, "intermediate_size", None)
    parts = long_memory_parts(facts, n, d_ff)
    t = e.truncation
    st.caption(f"The text has **{t.n_tokens_requested:,} tokens**; "
               + (f"the first **{n:,}** are recorded." if t.truncated else f"all **{n:,}** are recorded.")
               + f" Memory for the recording: about **{human_bytes(sum(parts.values()))}** (queries and keys "
               f"{human_bytes(parts['record'])}, summaries {human_bytes(parts['summaries'])}, the pass "
               f"{human_bytes(parts['forward'])}), where every map kept densely in float32 would take "
               f"{human_bytes(4 * facts.n_layers * facts.n_heads * n * n)}.")
    try:
        check_long_fits(facts, n, d_ff=d_ff)
    except BadInput as err:
        st.warning(str(err))
        return None
    return limit, n
