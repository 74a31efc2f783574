"""Home page: what attnviz shows and where to find it (every page of the registry)."""
import streamlit as st

from attnviz.ui.registry import HOME, PAGES


st.title("attnviz · see attention at work")
st.markdown(
    "attnviz shows what the attention heads of a transformer do with your text: every layer "
    "and head as a heatmap, how focused each head is, which input tokens feed the output, what "
    "role each head plays, and how attention forms while a small model trains. It runs offline "
    "on the CPU with a packaged BERT (all-MiniLM-L6-v2) and a packaged causal LLM (SmolLM2-135M); "
    "any HuggingFace model you have locally works too."
)
st.markdown("**Start here:** type a sentence in the sidebar, then open a page. The Learn pages need no "
            "model: they work on small numbers you can edit.")

sections: dict[str, list] = {}
for spec in PAGES:
    if spec is not HOME:  # the numbered lab pages get a column of their own
        sections.setdefault("Attention lab" if spec.lecture else spec.section, []).append(spec)
cols = st.columns(len(sections) or 1)
for col, (section, specs) in zip(cols, sections.items()):
    with col:
        st.subheader(section)
        for spec in specs:
            st.page_link(spec.file, label=spec.title)
            if spec.blurb:
                st.caption(spec.blurb)
