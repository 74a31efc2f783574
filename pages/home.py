"""Home page: what attnviz shows and where to find it (every page of app.py's PAGES list)."""
import ast
from pathlib import Path

import streamlit as st

from attnviz.ui.shell import ensure_app_shell

ensure_app_shell()

ROOT = Path(__file__).resolve().parent.parent


def registered_pages() -> list[tuple[str, str, str]]:
    """(section, file, title) of every page in app.py's PAGES list, in its order. The list is read
    from app.py's source (running app.py would draw the whole app), so it is written once."""
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PAGES":
            return [(section, file, title) for section, file, title, _icon in ast.literal_eval(node.value)]
    return []


# One line per page saying what it is for; a page without one is still listed.
WHAT = {
    "pages/heatmap.py": "every head as a thumbnail, one head in detail, one token across heads, the text shaded "
                        "by attention",
    "pages/query_key.py": "one attention row rebuilt from the query and key vectors",
    "pages/entropy.py": "which heads are focused and which are broad",
    "pages/rollout.py": "which input tokens feed each output token (rollout and flow)",
    "pages/head_roles.py": "what each head does, induction heads included",
    "pages/ablation.py": "switch heads off and measure the effect",
    "pages/compare.py": "two sentences or two models side by side",
    "pages/lab_steps.py": "the computation step by step, on numbers you can edit",
    "pages/lab_scaling.py": "why the scores are divided by √d_k",
    "pages/lab_temperature.py": "from soft averaging to a hard lookup",
    "pages/lab_masks.py": "causal and padding masks, and what forgetting one does",
    "pages/lab_multihead.py": "heads as slices of d_model, grouped-query attention",
    "pages/lab_variants.py": "Bahdanau and Luong scores; self-, cross- and causal attention",
    "pages/lab_kv_cache.py": "what generation stores per token, and what it saves",
    "pages/lab_quiz.py": "test yourself; common mistakes happening live",
    "pages/positional.py": "sinusoidal, learned, RoPE, ALiBi",
    "pages/complexity.py": "what attention costs as inputs grow",
    "pages/training.py": "watch attention form while a model learns",
}

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

sections: dict[str, list[tuple[str, str]]] = {}
for section, file, title in registered_pages():
    if file != "pages/home.py" and (ROOT / file).exists():
        if section == "Learn" and title[:1].isdigit():  # the numbered lab pages get a column of their own
            section = "Attention lab"
        sections.setdefault(section, []).append((file, title))
cols = st.columns(len(sections) or 1)
for col, (section, links) in zip(cols, sections.items()):
    with col:
        st.subheader(section)
        for file, title in links:
            st.page_link(file, label=title)
            if file in WHAT:
                st.caption(WHAT[file])
