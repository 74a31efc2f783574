"""attnviz entry point: page config, the shared sidebar, and navigation over app_pages/ (from the registry)."""
from pathlib import Path

import pandas  # noqa: F401  imported fully up front: plotly's lazy look-up of pandas is not thread-safe
import streamlit as st
from streamlit.errors import StreamlitAPIException

from attnviz.runtime import one_blas_thread
from attnviz.ui import busy, decks, message_refs, page, share, sidebar
from attnviz.ui.registry import HOME, PAGES

message_refs.install()  # once per process, before any run has ended: references only to copies the browser holds
one_blas_thread()  # once per process: numpy's products on one thread (runtime.one_blas_thread)

_presenting = ((st.query_params.get("present") == "1" or bool(st.session_state.get("present")))
               and st.query_params.get("end") != "1")  # a deck's End link leaves presentation mode
st.set_page_config(page_title="attnviz", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"), layout="wide",
                   initial_sidebar_state="collapsed" if _presenting
                   else "expanded" if st.query_params.get("end") == "1" else "auto")


sections: dict[str, list] = {}
for spec in PAGES:
    sections.setdefault(spec.section, []).append(
        st.Page(spec.file, title=spec.title, icon=spec.icon, url_path=spec.name, default=spec is HOME))

nav = st.navigation(sections, position="top")
decks.enter(nav.url_path)  # a deck's slide opens as its link does, also when reached without a page load
page.begin(nav.url_path)
sidebar.render()
page.reserve_closing()  # where the run's closing boxes go: the batch export, the deck's box, the link
decks.slide_bar()  # a deck's slide: previous / next / counter, arrow keys
share.sync_url(early=True)  # a new page's URL has the model and text before the page has finished
try:
    busy.run(nav.run)  # at most a few pages compute at once; the others wait under a plain 'busy' message
except StreamlitAPIException:  # a widget refused a value: if it came from a hand-edited link, drop it
    if not share.reject_link_values():
        raise
    st.rerun()
else:
    share.accept_link_values()
    share.run_completed()
    decks.keep_slide_charts()  # a slide's charts, for the slide before to have drawn out of sight
finally:  # also after st.stop() in a page: keep the URL and the share link current
    page.end()
