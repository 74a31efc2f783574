"""attnviz entry point: page config, the shared sidebar, and navigation over pages/."""
from pathlib import Path

import pandas  # noqa: F401  imported fully up front: plotly's lazy look-up of pandas is not thread-safe
import streamlit as st
from streamlit.errors import StreamlitAPIException

from attnviz.ui import share, sidebar
from attnviz.ui.shell import app_shell

_presenting = st.query_params.get("present") == "1" or bool(st.session_state.get("present"))
st.set_page_config(page_title="attnviz", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if _presenting else "auto")

HERE = Path(__file__).parent

# (section, file, title, icon). A page file that does not exist yet is left out, so the
# list can name planned pages; st.navigation turns off automatic pages/ discovery.
PAGES = [
    ("Inspect", "pages/home.py", "Home", ":material/home:"),
    ("Inspect", "pages/heatmap.py", "Attention heatmap", ":material/grid_on:"),
    ("Inspect", "pages/query_key.py", "Query · key", ":material/join_inner:"),
    ("Analyse", "pages/entropy.py", "Entropy", ":material/bar_chart:"),
    ("Analyse", "pages/rollout.py", "Rollout", ":material/account_tree:"),
    ("Analyse", "pages/head_roles.py", "Head roles", ":material/explore:"),
    ("Analyse", "pages/ablation.py", "Ablation", ":material/content_cut:"),
    ("Analyse", "pages/compare.py", "Compare", ":material/compare:"),
    ("Learn", "pages/lab_steps.py", "1 · Scaled dot-product", ":material/science:"),
    ("Learn", "pages/lab_scaling.py", "2 · Why √d_k", ":material/functions:"),
    ("Learn", "pages/lab_temperature.py", "3 · Temperature", ":material/thermostat:"),
    ("Learn", "pages/lab_masks.py", "4 · Masks", ":material/visibility_off:"),
    ("Learn", "pages/lab_multihead.py", "5 · Multi-head", ":material/view_module:"),
    ("Learn", "pages/lab_variants.py", "6 · Variants", ":material/alt_route:"),
    ("Learn", "pages/lab_kv_cache.py", "7 · KV cache", ":material/storage:"),
    ("Learn", "pages/lab_quiz.py", "8 · Quick checks", ":material/quiz:"),
    ("Learn", "pages/positional.py", "Positional encodings", ":material/place:"),
    ("Learn", "pages/complexity.py", "Complexity", ":material/speed:"),
    ("Learn", "pages/training.py", "Training evolution", ":material/model_training:"),
]

sections: dict[str, list] = {}
for section, file, title, icon in PAGES:
    if (HERE / file).exists():
        sections.setdefault(section, []).append(
            st.Page(file, title=title, icon=icon, default=file == "pages/home.py"))

nav = st.navigation(sections, position="top")
share.start_run(nav.url_path)
share.apply_presentation()
sidebar.render()
share.sync_url(early=True)  # a new page's URL has the model and text before the page has finished
try:
    with app_shell():
        nav.run()
except StreamlitAPIException:  # a widget refused a value: if it came from a hand-edited link, drop it
    if not share.reject_link_values():
        raise
    st.rerun()
else:
    share.accept_link_values()
finally:  # also after st.stop() in a page: keep the URL and the share link current
    share.sync_url()
    share.render_link()
