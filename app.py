"""attnviz entry point: page config, the shared sidebar, and navigation over pages/."""
from pathlib import Path

import streamlit as st

from attnviz.ui import sidebar

st.set_page_config(page_title="attnviz", page_icon="🔍", layout="wide")

HERE = Path(__file__).parent

# (section, file, title, icon). A page file that does not exist yet is left out, so the
# list can name planned pages; st.navigation turns off automatic pages/ discovery.
PAGES = [
    ("Inspect", "pages/heatmap.py", "Attention heatmap", "🔥"),
    ("Analyse", "pages/entropy.py", "Entropy", "📊"),
    ("Analyse", "pages/rollout.py", "Rollout", "🧮"),
    ("Analyse", "pages/head_roles.py", "Head roles", "🧭"),
    ("Analyse", "pages/ablation.py", "Ablation", "✂️"),
    ("Analyse", "pages/compare.py", "Compare", "⚖️"),
    ("Learn", "pages/lab_steps.py", "Scaled dot-product", "🧪"),
    ("Learn", "pages/lab_scaling.py", "Why √d_k", "📐"),
    ("Learn", "pages/lab_temperature.py", "Temperature", "🌡️"),
    ("Learn", "pages/lab_masks.py", "Masks", "🎭"),
    ("Learn", "pages/lab_multihead.py", "Multi-head", "🧩"),
    ("Learn", "pages/lab_variants.py", "Variants", "🔀"),
    ("Learn", "pages/lab_kv_cache.py", "KV cache", "🗄️"),
    ("Learn", "pages/lab_quiz.py", "Quick checks", "❓"),
    ("Learn", "pages/positional.py", "Positional encodings", "📍"),
    ("Learn", "pages/complexity.py", "Complexity", "⏱️"),
    ("Learn", "pages/training.py", "Training evolution", "🏋️"),
]

sections: dict[str, list] = {}
for section, file, title, icon in PAGES:
    if (HERE / file).exists():
        sections.setdefault(section, []).append(st.Page(file, title=title, icon=icon))

nav = st.navigation(sections)
sidebar.render()
nav.run()
