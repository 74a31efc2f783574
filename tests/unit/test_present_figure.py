"""Presentation sizing of a figure (ui.figure.present_figure): every text at projector size, on a copy."""
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attnviz.plotting import NUMBERS_ATTR, attach_numbers
from attnviz.ui.figure import PRESENT_FONT, PRESENT_INK, PRESENT_MAX_HEIGHT, PRESENT_TITLE, present_figure


def _heatmap_and_bars() -> go.Figure:
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Heatmap(z=np.arange(6.0).reshape(2, 3), text=[["a"] * 3] * 2,
                             textfont={"size": 11, "color": "white"}), row=1, col=1)
    fig.add_trace(go.Bar(x=[1, 2], y=[3, 4], marker={"color": [1, 2], "showscale": False}), row=1, col=2)
    fig.update_layout(title={"text": "Weights", "font": {"size": 14, "family": "serif"}}, height=300,
                      margin={"t": 30, "l": 5}, legend={"font": {"size": 30}},
                      annotations=[{"text": "note", "x": 0, "y": 0, "font": {"size": 9}}])
    fig.update_xaxes(type="log", row=1, col=2)
    return fig


def test_every_text_grows_to_projector_size_on_a_copy():
    fig = _heatmap_and_bars()
    before = fig.to_dict()
    out = present_figure(fig)
    assert fig.to_dict() == before  # the figure given (perhaps a shared, cached one) is left as it was
    d = out.to_dict()
    layout, (heat, bars) = d["layout"], d["data"]
    assert layout["font"] == {"size": PRESENT_FONT, "color": PRESENT_INK}
    for name in ("xaxis", "xaxis2", "yaxis", "yaxis2"):  # both subplots' axes
        ax = layout[name]
        assert ax["automargin"] is True and ax["tickfont"] == {"size": PRESENT_FONT, "color": PRESENT_INK}
        assert ax["title"]["font"] == {"size": PRESENT_FONT, "color": PRESENT_INK}
    assert layout["xaxis2"]["dtick"] == 1 and "dtick" not in layout["xaxis"]  # only the log axis keeps powers of ten
    assert layout["title"]["font"] == {"size": PRESENT_TITLE, "color": PRESENT_INK}  # 14 px raised to 22
    assert (layout["title"]["yref"], layout["title"]["y"], layout["title"]["pad"]) == ("container", 1.0, {"t": 6, "b": 10})
    assert layout["legend"]["font"]["size"] == 30  # already larger: kept
    assert layout["annotations"][0]["font"]["size"] == PRESENT_FONT
    assert heat["colorbar"]["tickfont"]["size"] == PRESENT_FONT  # the heatmap shows its scale
    assert heat["textfont"] == {"size": PRESENT_FONT, "color": "white"}  # cell text keeps its own colour
    assert "colorbar" not in bars.get("marker", {})  # a marker hiding its scale gets no colour bar spec (a stray bar)
    assert bars["cliponaxis"] is False
    assert layout["margin"] == {"t": 60, "l": 20, "b": 20, "r": 20}  # a title needs 60 px on top
    assert layout["height"] == 375  # 300 x 1.25


def test_heights_grow_to_420_at_most_and_never_past_one_screen():
    for height, expected in ((None, 450), (200, 250), (400, 420), (480, 480), (900, PRESENT_MAX_HEIGHT)):
        fig = go.Figure(go.Bar(x=[1], y=[1]))
        if height:
            fig.update_layout(height=height)
        assert present_figure(fig).layout.height == expected, height


def test_colour_axes_only_when_a_trace_uses_one_and_the_numbers_follow_the_copy():
    plain = present_figure(go.Figure(go.Heatmap(z=[[1, 2]])))
    assert "coloraxis" not in plain.to_dict()["layout"]  # an unused colour axis would draw an extra colour bar
    shared = go.Figure(go.Heatmap(z=[[1, 2]], coloraxis="coloraxis"))
    attach_numbers(shared, lambda: "a,b\n1,2\n")
    out = present_figure(shared)
    assert out.to_dict()["layout"]["coloraxis"]["colorbar"]["tickfont"] == {"size": PRESENT_FONT}
    assert getattr(out, NUMBERS_ATTR)() == "a,b\n1,2\n"
