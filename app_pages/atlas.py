"""Head atlas: every head of the sidebar's model over a corpus (statistics, patterns, related heads, syntax, search)."""
import streamlit as st

from attnviz.ui import atlas as ui
from attnviz.ui.page import lazy_tabs
from attnviz.ui.page import stop as stop_page
from attnviz.ui.present import page_intro
from attnviz.ui.share import bind
from attnviz.ui.sidebar import model_key, using_trained
from attnviz.units import count_text

bind({ui.TAB: str, **ui.KEYS})
page_intro("Head atlas",
    "One sentence shows what a head did once; a corpus shows what it does. Run a corpus through the sidebar's "
    "model and every head's statistics are stored for every sentence (on disk, as Parquet files queried with "
    "DuckDB, so the app finds them again next time, and a run that stops keeps what it finished and resumes). "
    "Then map any statistic over all heads with its confidence interval, rank the heads by a pattern you define, "
    "find heads that attend alike, measure which heads follow syntax (as Clark et al. 2019 did for BERT), and "
    "search the corpus for the contexts where a head does something.")

if using_trained():
    st.info("The atlas runs a corpus through a pretrained model: choose MiniLM, SmolLM2 or another model in the "
            "sidebar (the trained toy model has only its probe input).")
    stop_page()
key = model_key()
if not key:
    st.info("Type a HuggingFace hub id or a local model folder in the sidebar.")
    stop_page()

with st.container(border=True):
    st.markdown(f"**Run a corpus** through **{key}**")
    corpus = ui.corpus_picker()
    if corpus is not None:
        ui.run_panel(key, corpus)

atlas = ui.choose_store(key)
if atlas is None:
    stop_page()
st.caption(f"{count_text(atlas.n_sentences)} sentences stored · {atlas.n_layers} layers × {atlas.n_heads} heads · "
           + ("words (pieces merged)" if atlas.info.get("words") else "word pieces")
           + f" · the same store `python -m attnviz.atlas --model {key} --out <folder>` writes.")
lazy_tabs(ui.TABS, ui.TAB, (ui.heads_view, ui.pattern_view, ui.related_view, ui.syntax_view, ui.search_view), atlas)
