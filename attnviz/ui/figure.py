"""show_figure: st.plotly_chart with presentation sizing and an export row (PNG, SVG, CSV, HTML)."""
from __future__ import annotations

import re
from contextlib import contextmanager
from functools import partial

import streamlit as st

from attnviz.errors import AttnvizError
from attnviz.export import figure_csv, figure_html, figure_image
from attnviz.plotting import _uses_coloraxis, attach_numbers, copy_figure, no_si_prefixes
from attnviz.ui import plotly_bytes
from attnviz.ui.present import presenting

PRESENT_FONT = 18  # px: the smallest figure text in presentation mode (the body text's size)
PRESENT_TITLE = 22  # px: figure titles
PRESENT_SCALE = 1.25
# Tallest figure in presentation mode (px): with the top bar (~60 px) and its heading (~70 px) a
# figure fits on one 1280 x 720 screen, so a heading never lands on a different screen.
PRESENT_MAX_HEIGHT = 520
PRESENT_INK = "#111111"  # dark text for projectors


def _at_least(font: dict | None, size: int, ink: bool = True) -> dict:
    """A font spec (a plotly JSON dict or None) with its size raised to at least `size` (and dark ink unless `ink` is
    False: cell texts keep their own colour, one per cell where the figure chose them for contrast, else plotly's
    automatic one). Its other settings (the family) are not kept."""
    font = font or {}
    out = dict(size=max(size, font.get("size") or 0))
    if ink:
        out["color"] = PRESENT_INK
    elif font.get("color") is not None:
        out["color"] = font["color"]
    return out


def _axes(layout: dict, prefix: str) -> list[dict]:
    """The layout's axes (or colour axes) named prefix, prefix2, ...; the first one made when there is none (as
    plotly's update_xaxes does)."""
    names = [k for k in layout if re.fullmatch(prefix + r"\d*", k)] or [prefix]
    return [layout.setdefault(k, {}) for k in names]


def present_figure(fig):
    """A copy of a plotly figure enlarged for a projector: ticks, axis and figure titles, colour bars, legends,
    annotations and cell/bar texts all at least PRESENT_FONT px (Streamlit's theme would otherwise keep ticks at
    ~12 px), margins grown to fit, the height scaled, and bar labels allowed outside the plot area instead of being
    cut. Written on the figure's JSON, then wrapped without plotly's validation again (which took 12-19 ms a
    figure)."""
    d = fig.to_dict()
    layout, data = d.setdefault("layout", {}), d.setdefault("data", [])
    layout.setdefault("font", {}).update(size=PRESENT_FONT, color=PRESENT_INK)
    for ax in _axes(layout, "xaxis") + _axes(layout, "yaxis"):
        ax["automargin"] = True
        ax.setdefault("tickfont", {}).update(size=PRESENT_FONT, color=PRESENT_INK)
        ax.setdefault("title", {}).setdefault("font", {}).update(size=PRESENT_FONT, color=PRESENT_INK)
        # log axes label 2 and 5 between powers of ten at three quarters of the tick size: keep
        # only the powers of ten, at full size
        if ax.get("type") == "log" and ax.get("tickvals") is None and ax.get("dtick") is None:
            ax["dtick"] = 1
    title = layout.get("title") or {}
    if title.get("text"):
        title["font"] = _at_least(title.get("font"), PRESENT_TITLE)
        # the title pushes the plot down instead of covering tick labels (x axes on top included)
        title.update(automargin=True, yref="container", y=1.0, yanchor="top")
        title.setdefault("pad", {}).update(t=6, b=10)
    legend = layout.setdefault("legend", {})
    legend["font"] = _at_least(legend.get("font"), PRESENT_FONT)
    legend_title = legend.setdefault("title", {})
    legend_title["font"] = _at_least(legend_title.get("font"), PRESENT_FONT)
    hover = layout.setdefault("hoverlabel", {})
    hover["font"] = _at_least(hover.get("font"), PRESENT_FONT)
    for ann in layout.get("annotations") or ():
        ann["font"] = _at_least(ann.get("font"), PRESENT_FONT)
    if _uses_coloraxis(fig):  # touching an unused colour axis would draw an extra colour bar
        for ax in _axes(layout, "coloraxis"):
            bar = ax.setdefault("colorbar", {})
            bar.setdefault("tickfont", {})["size"] = PRESENT_FONT
            bar.setdefault("title", {}).setdefault("font", {})["size"] = PRESENT_FONT
    for obj, trace in zip(fig.data, data):  # the objects say which settings a trace's type has
        marker = getattr(obj, "marker", None)
        # a colorbar spec on a marker that does not show its scale makes Streamlit draw a stray bar
        holders = [(obj, trace)]
        if marker is not None and "colorbar" in marker and marker.showscale:
            holders.append((marker, trace.setdefault("marker", {})))
        for kind, holder in holders:
            if "colorbar" in kind and holder.get("showscale") is not False:
                bar = holder.setdefault("colorbar", {})
                bar["tickfont"] = _at_least(bar.get("tickfont"), PRESENT_FONT)
                bar_title = bar.setdefault("title", {})
                bar_title["font"] = _at_least(bar_title.get("font"), PRESENT_FONT)
        for name in ("textfont", "insidetextfont", "outsidetextfont"):
            if name in obj:
                trace[name] = _at_least(trace.get(name), PRESENT_FONT, ink=False)
        if trace.get("type") == "bar":
            trace["cliponaxis"] = False
    margin = layout.setdefault("margin", {})
    margin.update(t=max(margin.get("t") or 0, 60 if title.get("text") else 20), b=max(margin.get("b") or 0, 20),
                  l=max(margin.get("l") or 0, 20), r=max(margin.get("r") or 0, 20))
    # small figures grow (up to 420 px) for the larger text; none grows past one screen
    height = layout.get("height") or 450
    layout["height"] = int(min(PRESENT_MAX_HEIGHT, max(height, min(height * PRESENT_SCALE, 420))))
    return copy_figure(fig, d)


def presented(fig):
    """present_figure(fig); a shared figure (ui.cache.figure) keeps its enlarged copy, shared and read-only as well,
    so a slide shown again (or to a whole class) neither enlarges nor serialises it again."""
    if not getattr(fig, "_attnviz_shared", False):
        return present_figure(fig)
    kept = getattr(fig, "_attnviz_presented", None)
    if kept is None:
        kept = present_figure(fig)
        kept._attnviz_shared = True
        fig._attnviz_presented = kept
    return kept


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "figure"


def _svg(fig, name: str = ""):
    try:
        return figure_image(fig, "svg", title=name.replace("-", " "))
    except AttnvizError as e:
        return f"<!-- {e} -->".encode()


COUNTER = "_figure_counter"


_PAGE_FIGURES = "_page_figures"


def reset_counter() -> None:
    """Called at the start of every run so automatic figure keys are stable across reruns,
    and the list of this run's figures (for the batch export) starts empty."""
    st.session_state[COUNTER] = 0
    st.session_state[_PAGE_FIGURES] = {}


def page_figures() -> list:
    """[(name, figure, None or a callable making the copy its exports show (see exported))] shown so far in this
    run (a part's rerun replaces its own figures: see part_figures)."""
    return list(st.session_state.get(_PAGE_FIGURES, {}).values())


def exported(fig, shapes: list | None, numbers=None):
    """A copy of `fig` as its exports show it: with `shapes` drawn over it, and `numbers` (a callable returning CSV
    text) as its numbers when given."""
    out = copy_figure(fig)
    for shape in shapes or ():
        out.add_shape(shape)
    if numbers is not None:
        attach_numbers(out, numbers)
    return out


_PART_FIGURES = "_figures_of_parts"  # part name -> keys of the figures it showed in its last run


@contextmanager
def part_figures(name: str, full: bool):
    """Around a part's body: a rerun of the part alone first drops the figures its previous run showed, so the batch
    export lists what the page shows now (none after a message); the figures the body shows are then its own."""
    shown = st.session_state.setdefault(_PAGE_FIGURES, {})
    parts = st.session_state.setdefault(_PART_FIGURES, {})
    if not full:
        for key in parts.get(name, ()):
            shown.pop(key, None)
    before = set(shown)
    try:
        yield
    finally:  # also after a stop inside the part
        parts[name] = set(shown) - before


def _zip_or_note(figs, fmt):
    from attnviz.export import figures_zip

    try:
        return figures_zip([(name, finish(fig) if finish else fig) for name, fig, finish in figs], fmt)
    except AttnvizError as e:
        return str(e).encode()


def render_batch_export() -> None:
    """A button in the sidebar's closing boxes (ui.page): every figure of this page as PNG (and their numbers) in one .zip,
    rendered on the server by kaleido driving the installed Chromium."""
    figs = page_figures()
    if not figs or presenting():
        return
    st.download_button(f"All {len(figs)} figures of this page (.zip)" if len(figs) > 1 else
                       "The figure of this page (.zip)", lambda: _zip_or_note(figs, "png"),
                       file_name="attnviz-figures.zip", mime="application/zip", key="batch_export",
                       on_click="ignore", icon=":material/folder_zip:",
                       help="PNG images of every figure on this page plus their numbers as CSV, "
                            "rendered on the server (takes a few seconds).")


def _auto_key(fig) -> str:
    n = st.session_state.get(COUNTER, 0)
    st.session_state[COUNTER] = n + 1
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else ""
    return f"fig{n}_{_slug(title)[:40]}"


def clicked_key(key: str) -> str:
    """Where an in-place figure's click waits for clicked_head(key)."""
    return f"_{key}_clicked"


def show_figure(fig, key: str | None = None, *, name: str | None = None, exports: bool = True, toolbar: bool = True,
                in_place: bool = False, shapes: list | None = None, numbers=None, **kwargs):
    """The one way to draw a plotly figure; returns what st.plotly_chart returns (the selection with on_select:
    read a clicked head with ui.heads.clicked_head(key)).

    In presentation mode fonts and heights grow, and a figure without on_select is drawn in place (a slide's page is
    built anew on every step). Below the figure: downloads of its numbers
    (CSV), an offline HTML page and an SVG; the camera icon saves a PNG in the browser. toolbar=False hides
    plotly's buttons (the lab pages' figures). shapes: plotly shapes drawn over the figure (a frame around the
    chosen item), so a cached figure stays as it is; numbers: a callable returning the CSV its exports hold, for a
    cached figure built without the arrays behind it (the cache would keep them alive). in_place: the figure is drawn by plotly.js in the page and
    redrawn in place on a later run (ui.plotly_bytes): a map of more than plotting.BYTES_ABOVE values goes as
    float32 bytes, a large picture as a link, changed shapes alone are redrawn alone, and with on_select="rerun" a
    click on a point reports its customdata to clicked_head; without a running server (AppTest) st.plotly_chart
    draws it."""
    key = key or _auto_key(fig)
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else None
    name = _slug(name or title or key)
    if not getattr(fig, "_attnviz_shared", False):  # from ui.cache.figure: already without SI prefixes, read-only
        no_si_prefixes(fig)  # weights as 0.0001 or 1e-04, never plotly's default "100µ"
    if presenting():
        fig = presented(fig)
    config = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}}
    if not toolbar:
        config["displayModeBar"] = False
    config.update(kwargs.pop("config", {}))
    kwargs.setdefault("width", "stretch")
    # a slide draws its figures in place (each page a slide opens is built anew; plotly.js takes the figure as
    # it is, without Streamlit's path through JSON text twice), except those whose clicks a page reads
    in_place = in_place or (presenting() and kwargs.get("on_select") is None)
    drawn_in_place = in_place and plotly_bytes.available()
    if (shapes or numbers) and not drawn_in_place:
        fig, shapes, numbers = exported(fig, shapes, numbers), None, None
    if drawn_in_place:
        clicks = kwargs.get("on_select") == "rerun"
        plotly_bytes.show(fig, key, config, overlay=shapes,
                          on_click=(lambda: st.session_state.__setitem__(clicked_key(key), st.session_state[key]["click"]))
                          if clicks else None)
        event = None
    else:
        event = st.plotly_chart(fig, key=key, config=config, **kwargs)
    # the exports show what the page shows, shapes and all, with the numbers behind it (made when asked for)
    finish = partial(exported, shapes=shapes, numbers=numbers) if (shapes or numbers) else None
    st.session_state.setdefault(_PAGE_FIGURES, {})[key] = (name, fig, finish)
    if exports and not presenting():
        def download(fig=fig):  # what a download holds, made when one is asked for
            return finish(fig) if finish is not None else fig

        with st.container(horizontal=True, gap="small"):
            st.download_button("CSV", lambda: figure_csv(download()), file_name=f"{name}.csv", mime="text/csv",
                               key=f"{key}_csv", on_click="ignore", icon=":material/table:", type="tertiary",
                               help="The numbers behind this figure")
            st.download_button("HTML", lambda: figure_html(download()), file_name=f"{name}.html", mime="text/html",
                               key=f"{key}_html", on_click="ignore", icon=":material/code:", type="tertiary",
                               help="A standalone page of this figure that opens offline")
            st.download_button("SVG", lambda: _svg(download(), name), file_name=f"{name}.svg", mime="image/svg+xml",
                               key=f"{key}_svg", on_click="ignore", icon=":material/image:", type="tertiary",
                               help="Vector image, rendered on the server (needs Chromium)")
    return event


def figure_beside(fig, key: str, ratio=(3, 2), **kwargs):
    """Show `fig` in a left column (show_figure's keyword arguments go with it) and return the right column, for
    its explanation."""
    left, right = st.columns(list(ratio))
    with left:
        show_figure(fig, key=key, **kwargs)
    return right
