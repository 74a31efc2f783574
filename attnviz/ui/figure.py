"""show_figure: st.plotly_chart with presentation sizing and an export row (PNG, SVG, CSV, HTML)."""
from __future__ import annotations

import re

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.export import figure_csv, figure_html, figure_image
from attnviz.ui.share import presenting

PRESENT_FONT = 18
PRESENT_SCALE = 1.25


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def _svg(fig):
    try:
        return figure_image(fig, "svg")
    except AttnvizError as e:
        return f"<!-- {e} -->".encode()


_COUNTER = "_figure_counter"


_PAGE_FIGURES = "_page_figures"


def reset_counter() -> None:
    """Called at the start of every run so automatic figure keys are stable across reruns,
    and the list of this run's figures (for the batch export) starts empty."""
    st.session_state[_COUNTER] = 0
    st.session_state[_PAGE_FIGURES] = []


def page_figures() -> list:
    """[(name, figure)] shown so far in this run."""
    return list(st.session_state.get(_PAGE_FIGURES, []))


def _zip_or_note(figs, fmt):
    from attnviz.export import figures_zip

    try:
        return figures_zip(figs, fmt)
    except AttnvizError as e:
        return str(e).encode()


def render_batch_export() -> None:
    """Sidebar button: every figure of this page as PNG (and their numbers) in one .zip,
    rendered on the server by kaleido driving the installed Chromium."""
    figs = page_figures()
    if not figs or presenting():
        return
    with st.sidebar:
        st.download_button(f"All {len(figs)} figures of this page (.zip)" if len(figs) > 1 else
                           "The figure of this page (.zip)", lambda: _zip_or_note(figs, "png"),
                           file_name="attnviz-figures.zip", mime="application/zip", key="batch_export",
                           on_click="ignore", icon=":material/folder_zip:",
                           help="PNG images of every figure on this page plus their numbers as CSV, "
                                "rendered on the server (takes a few seconds).")


def _auto_key(fig) -> str:
    n = st.session_state.get(_COUNTER, 0)
    st.session_state[_COUNTER] = n + 1
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else ""
    return f"fig{n}_{_slug(title)[:40]}"


def show_figure(fig, key: str | None = None, *, name: str | None = None, exports: bool = True, **kwargs):
    """Draw a plotly figure; return what st.plotly_chart returns (the selection with on_select).

    In presentation mode fonts and heights grow. Below the figure: downloads of its numbers
    (CSV), an offline HTML page and an SVG; the camera icon saves a PNG in the browser."""
    key = key or _auto_key(fig)
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else None
    name = _slug(name or title or key)
    if presenting():
        fig.update_layout(font=dict(size=PRESENT_FONT, color="#111111"))  # dark text for projectors
        fig.update_xaxes(tickfont_color="#111111", title_font_color="#111111")
        fig.update_yaxes(tickfont_color="#111111", title_font_color="#111111")
        if fig.layout.height:
            fig.update_layout(height=int(fig.layout.height * PRESENT_SCALE))
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}}
    config.update(kwargs.pop("config", {}))
    kwargs.setdefault("width", "stretch")
    event = st.plotly_chart(fig, key=key, config=config, **kwargs)
    st.session_state.setdefault(_PAGE_FIGURES, []).append((name, fig))
    if exports and not presenting():
        with st.container(horizontal=True, gap="small"):
            st.download_button("CSV", lambda: figure_csv(fig), file_name=f"{name}.csv", mime="text/csv",
                               key=f"{key}_csv", on_click="ignore", icon=":material/table:", type="tertiary",
                               help="The numbers behind this figure")
            st.download_button("HTML", lambda: figure_html(fig), file_name=f"{name}.html", mime="text/html",
                               key=f"{key}_html", on_click="ignore", icon=":material/code:", type="tertiary",
                               help="A standalone page of this figure that opens offline")
            st.download_button("SVG", lambda: _svg(fig), file_name=f"{name}.svg", mime="image/svg+xml",
                               key=f"{key}_svg", on_click="ignore", icon=":material/image:", type="tertiary",
                               help="Vector image, rendered on the server (needs Chromium)")
    return event
