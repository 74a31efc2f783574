"""Bounded Streamlit caches for models and attention results (shared by all sessions)."""
from __future__ import annotations

import streamlit as st

from attnviz.extract import extract
from attnviz.models import load_model


@st.cache_resource(max_entries=3, show_spinner=False)
def get_model(key: str):
    """LoadedModel for a registry key, hub id or folder. Shared: never mutate it."""
    import transformers

    transformers.logging.set_verbosity_error()
    return load_model(key)


# cache_resource, not cache_data: an AttentionResult's arrays are read-only, so sessions can
# share it without the ~45 ms unpickled copy cache_data makes per hit at 512 tokens.
@st.cache_resource(max_entries=16, show_spinner=False)
def get_result(model_key: str, text: str, text_pair: str | None, max_tokens: int | None):
    return extract(get_model(model_key), text, text_pair, max_tokens=max_tokens)
