"""Home page: what attnviz shows and where to find it."""
import streamlit as st

from attnviz.ui.shell import ensure_app_shell

ensure_app_shell()

st.title("attnviz · see attention at work")
st.markdown(
    "attnviz shows what the attention heads of a transformer do with your text: every layer "
    "and head as a heatmap, how focused each head is, which input tokens feed the output, what "
    "role each head plays, and how attention forms while a small model trains. It runs offline "
    "on the CPU with a packaged BERT (all-MiniLM-L6-v2) and a packaged causal LLM (SmolLM2-135M); "
    "any HuggingFace model you have locally works too."
)
st.markdown("**Start here:** type a sentence in the sidebar, then open a page.")

LINKS = [
    ("Inspect", [("pages/heatmap.py", "Attention heatmap", "every head as a thumbnail, one head in detail, one token "
                                                           "across heads, the text shaded by attention"),
                 ("pages/query_key.py", "Query · key", "one attention row rebuilt from the query and key vectors")]),
    ("Analyse", [("pages/entropy.py", "Entropy", "which heads are focused and which are broad"),
                 ("pages/rollout.py", "Rollout", "which input tokens feed each output token (rollout and flow)"),
                 ("pages/head_roles.py", "Head roles", "what each head does, induction heads included"),
                 ("pages/ablation.py", "Ablation", "switch heads off and measure the effect"),
                 ("pages/compare.py", "Compare", "two sentences or two models side by side")]),
    ("Learn", [("pages/lab_steps.py", "Scaled dot-product", "the computation step by step"),
               ("pages/positional.py", "Positional encodings", "sinusoidal, learned, RoPE, ALiBi"),
               ("pages/complexity.py", "Complexity", "what attention costs as inputs grow"),
               ("pages/training.py", "Training evolution", "watch attention form while a model learns")]),
]
from pathlib import Path  # noqa: E402

root = Path(__file__).resolve().parent.parent
cols = st.columns(len(LINKS))
for col, (section, links) in zip(cols, LINKS):
    with col:
        st.subheader(section)
        for file, title, what in links:
            if (root / file).exists():
                st.page_link(file, label=title)
                st.caption(what)
