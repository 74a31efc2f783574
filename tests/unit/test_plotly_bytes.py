"""plotting.figure_bytes (as ui.plotly_bytes sends it): a figure with a large map as one message of JSON and
float32 bytes, and back."""
import json
import struct

import numpy as np
import plotly.graph_objects as go

from attnviz import plotting
from attnviz.heatmap.figures import heatmap_figure
from attnviz.ui import plotly_bytes


def _map(n: int, seed: int = 0, causal: bool = True):
    rng = np.random.default_rng(seed)
    w = rng.random((n, n)).astype(np.float32)
    w /= w.sum(axis=1, keepdims=True)
    tokens = [f"t{i}" for i in range(n)]
    return w, heatmap_figure(w, tokens, tokens, causal=causal, title="a head")


def test_the_map_travels_as_float32_and_comes_back_bit_for_bit():
    w, fig = _map(96)
    data = plotly_bytes.payload(fig, {"displaylogo": False}, "/media/plotly.js")
    n = struct.unpack("<I", data[:4])[0]
    head = json.loads(data[4:4 + n])
    assert head["arrays"] == [{"trace": 0, "field": "z", "shape": [96, 96]}]
    assert head["figure"]["data"][0]["z"] is None and "bdata" not in data[4:4 + n].decode()
    assert len(data) == 4 + n + (4 - n % 4) % 4 + 96 * 96 * 4  # the JSON, its padding, then the weights alone
    spec = plotting.figure_from_bytes(data)
    z = spec["figure"]["data"][0]["z"]
    sent = np.asarray(fig.data[0].z)  # the causal map: future keys blank (NaN), the rest the exact weights
    assert z.dtype == np.float32 and z.shape == (96, 96)
    np.testing.assert_array_equal(np.isnan(z), np.triu(np.ones((96, 96), bool), 1))
    np.testing.assert_array_equal(z[~np.isnan(z)], w[np.tril(np.ones((96, 96), bool))])
    np.testing.assert_array_equal(z, sent)
    assert spec["figure"]["data"][0]["x"] == list(fig.data[0].x)
    assert spec["config"] == {"displaylogo": False} and spec["plotly"] == "/media/plotly.js"


def test_a_map_coloured_over_its_data_goes_with_that_span_and_other_maps_as_they_are():
    """A heatmap plotly.js colours over its data's span (zauto, or no zmin/zmax range: a zmin alone is ignored) is
    sent with zmin/zmax set to its least and greatest finite values (the causal map's blank cells left out), as
    float32 values read back exactly, and zauto off; a map with its own range, a midpoint, a colour axis, all values
    equal or none finite goes as it is."""
    w, fig = _map(96)
    lower = w[np.tril(np.ones((96, 96), bool))]
    span = (min(map(float, lower)), max(map(float, lower)))
    tokens = [f"t{i}" for i in range(96)]

    def sent(f):
        return plotting.figure_from_bytes(plotly_bytes.payload(f, {}, "/p.js"))["figure"]["data"][0]

    spanned = [fig, heatmap_figure(w, tokens, tokens, causal=True, zmin=0.0),
               go.Figure(go.Heatmap(z=np.where(np.tril(np.ones((96, 96), bool)), w, np.nan), zmin=0.3, zmax=0.1)),
               go.Figure(go.Heatmap(z=np.where(np.tril(np.ones((96, 96), bool)), w, np.inf), zmin=0, zmax=1,
                                    zauto=True))]
    for f in spanned:
        trace = sent(f)
        assert span[0] < span[1] and (trace["zmin"], trace["zmax"], trace["zauto"]) == (*span, False)
        assert np.float32(trace["zmin"]) == trace["zmin"]
    assert fig.data[0].zmin is None  # the figure itself unchanged
    kept = [(heatmap_figure(w, tokens, tokens, zmin=0.0, zmax=0.5), (0.0, 0.5)),
            (go.Figure(go.Heatmap(z=w, zmin=0.1, zmax=0.2, zauto=False)), (0.1, 0.2)),
            (go.Figure(go.Heatmap(z=w - 0.01, zmid=0)), (None, None)),
            (go.Figure(go.Heatmap(z=w, coloraxis="coloraxis")), (None, None)),
            (go.Figure(go.Heatmap(z=np.full((96, 96), 0.25, np.float32))), (None, None)),
            (go.Figure(go.Heatmap(z=np.full((96, 96), np.nan, np.float32))), (None, None))]
    for f, (low, high) in kept:
        trace = sent(f)
        assert trace["z"].shape == (96, 96)  # it went as bytes
        assert (trace.get("zmin"), trace.get("zmax")) == (low, high) and trace.get("zauto") in (None, False)


def test_the_layout_keeps_the_figures_settings_over_the_theme_without_plotlys_template():
    _, fig = _map(80)
    layout = plotting.figure_from_bytes(plotly_bytes.payload(fig, {}, "u"))["figure"]["layout"]
    assert "template" not in layout
    assert layout["title"]["text"] == "a head" and layout["title"]["font"] == plotly_bytes.THEME["title"]["font"]
    assert layout["height"] == fig.layout.height
    assert layout["yaxis"]["autorange"] == "reversed" and layout["yaxis"]["tickfont"]["color"] == plotly_bytes.TEXT
    assert layout["xaxis"]["title"]["text"].startswith("key (attended to)")
    assert layout["xaxis"]["title"]["font"] == plotly_bytes.THEME["xaxis"]["title"]["font"]
    assert layout["font"]["family"] == plotly_bytes.FONT


def test_only_large_numeric_arrays_go_as_bytes_and_the_digest_follows_the_numbers():
    small_w, small = _map(16)
    assert plotting.large_arrays(small) == []  # 256 values: the figure's JSON keeps them
    spec = plotting.figure_from_bytes(plotly_bytes.payload(small, {}, "u"))
    assert spec["arrays"] == [] and spec["figure"]["data"][0]["z"] is not None
    big_w = np.random.default_rng(1).random((65, 65)).astype(np.float32)  # 4,225 values: above BYTES_ABOVE
    fig = go.Figure([go.Heatmap(z=big_w), go.Heatmap(z=small_w, showscale=False)])
    assert plotting.large_arrays(fig) == [(0, "z")]
    a = plotting.figure_from_bytes(plotly_bytes.payload(fig, {}, "u"))
    np.testing.assert_array_equal(a["figure"]["data"][0]["z"], big_w)
    assert a["figure"]["data"][1]["z"] is not None  # the small one stays in the JSON
    again = plotting.figure_from_bytes(plotly_bytes.payload(go.Figure([go.Heatmap(z=big_w.copy()),
                                                                go.Heatmap(z=small_w, showscale=False)]), {}, "u"))
    assert again["digest"] == a["digest"]
    changed = big_w.copy()
    changed[40, 7] = np.nextafter(changed[40, 7], np.float32(2))  # one weight, one step of float32
    other = plotting.figure_from_bytes(plotly_bytes.payload(go.Figure([go.Heatmap(z=changed),
                                                                go.Heatmap(z=small_w, showscale=False)]), {}, "u"))
    assert other["digest"] != a["digest"]


def test_a_large_picture_goes_as_a_link_over_the_same_area_and_the_maps_trace_index_follows():
    """pictures_as_links: a grid's PNG becomes a layout image of its exact size and place, its link made once per
    picture; a small picture stays embedded; a large map after the picture keeps pointing at its own trace."""
    from attnviz.heatmap.figures import grid_figure
    from attnviz.heatmap.raster import GridLayout, grid_png

    layout = GridLayout(6, 6, 48, 2)
    att = np.random.default_rng(1).random((6, 6, 48, 48)).astype(np.float32)
    png = grid_png(att, layout)
    grid = grid_figure(png, layout)
    assert len(grid.data[0].source) > plotting.LINK_ABOVE
    w, _ = _map(80)
    grid.add_trace(go.Heatmap(z=w, xaxis="x2", yaxis="y2"))  # a map after the picture: trace 2, then 1
    links = []
    spec = plotting.figure_from_bytes(plotting.figure_bytes(grid, {}, link=lambda i, b: links.append((i, b)) or "/p"))
    assert links == [(0, png)]
    assert [t["type"] for t in spec["figure"]["data"]] == ["scatter", "heatmap"]
    assert spec["arrays"] == [{"trace": 1, "field": "z", "shape": [80, 80]}]
    np.testing.assert_array_equal(spec["figure"]["data"][1]["z"], w)
    image = spec["figure"]["layout"]["images"][0]
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (layout.width, layout.height)
    assert image == dict(source="/p", xref="x", yref="y", x=-0.5, y=-0.5, sizex=width, sizey=height,
                         xanchor="left", yanchor="top", sizing="stretch", layer="below")
    small = go.Figure(go.Image(source="data:image/png;base64,iVBORw0KGgo="))
    kept = plotting.figure_from_bytes(plotting.figure_bytes(small, {}, link=lambda i, b: "/never"))
    assert kept["figure"]["data"][0]["source"].startswith("data:image/png") and "images" not in kept["figure"]["layout"]


def test_shapes_drawn_over_a_figure_follow_it_and_clicks_are_announced():
    """The overlay (the open head's frame) comes after the figure's bytes as JSON, so the figure's part and its
    digest stay the same when only the frame moves; a clickable figure says so."""
    import types

    w, fig = _map(70)
    base = plotly_bytes.payload(fig, {}, "u", clicks=True)
    spec = plotting.figure_from_bytes(base)
    assert spec["clicks"] is True and "clicks" not in plotting.figure_from_bytes(plotly_bytes.payload(fig, {}, "u"))
    frame = [{"type": "rect", "x0": 1, "x1": 2, "y0": 3, "y1": 4}]
    sent = base + json.dumps(frame).encode()
    end = len(base)
    assert json.loads(sent[end:]) == frame and sent[:end] == base
    assert end == 4 + struct.unpack("<I", base[:4])[0] + (4 - struct.unpack("<I", base[:4])[0] % 4) % 4 + 70 * 70 * 4
    # a shared figure's message is made once: the second call returns the same bytes object
    made = []
    real = plotly_bytes.payload
    files = types.SimpleNamespace(add=lambda data, mime, name: f"/media/{name}")
    plotly_bytes._files, saved = (lambda: files), plotly_bytes._files
    plotly_bytes.payload = lambda *a, **k: made.append(1) or real(*a, **k)
    try:
        fig._attnviz_shared = True
        first = plotly_bytes._message(fig, "k", {"a": 1}, False)
        assert plotly_bytes._message(fig, "k", {"a": 1}, False) is first and len(made) == 1
        assert plotly_bytes._message(fig, "k", {"a": 2}, False) is not first and len(made) == 2
    finally:
        plotly_bytes._files, plotly_bytes.payload = saved, real


def test_the_theme_grows_its_rem_distances_with_the_root_font_and_marks_ticks_on_maps_only():
    base, big = plotly_bytes.theme(), plotly_bytes.theme(21)
    assert base == plotly_bytes.THEME and base is not plotly_bytes.THEME
    assert (big["margin"]["pad"], big["title"]["pad"]["l"]) == (10.5, 5.25)  # 0.5 and 0.25 rem of 21 px
    assert (big["xaxis"]["title"]["standoff"], big["yaxis"]["title"]["standoff"]) == (26.25, 31.5)  # 1.25, 1.5 rem
    assert plotly_bytes.THEME["margin"]["pad"] == 8  # the base is left as it was
    bars = plotting.figure_from_bytes(plotly_bytes.payload(go.Figure(go.Bar(y=[1, 2])), {}, "u", root_px=21))
    layout = bars["figure"]["layout"]
    assert (layout["xaxis"]["ticks"], layout["yaxis"]["ticks"], layout["margin"]["pad"]) == ("", "", 10.5)
    heat = plotting.figure_from_bytes(plotly_bytes.payload(go.Figure(go.Heatmap(z=[[1, 2]])), {}, "u"))
    assert "ticks" not in heat["figure"]["layout"]["xaxis"]  # a map keeps plotly's ticks, as Streamlit draws it


def test_the_script_goes_without_its_comment_lines_and_keeps_every_line_of_code():
    js = plotly_bytes._JS
    sent = plotly_bytes.without_comment_lines(js)
    code = [line for line in js.split("\n") if not line.lstrip().startswith("//")]
    comments = [line for line in js.split("\n") if line.lstrip().startswith("//")]
    assert "`" not in js  # no template literal, so no comment-looking line lies inside a string
    assert len(comments) > 10 and not any(line.lstrip().startswith("//") for line in sent.split("\n"))
    assert sent.split("\n") == code and len(sent) < len(js) - sum(len(c) for c in comments) + 1
    # a comment after code stays with its code; a line of code that merely contains // is kept
    assert plotly_bytes.without_comment_lines("a();  // why\n  // gone\nb('http://x');") == "a();  // why\nb('http://x');"


def test_a_next_slides_charts_travel_as_one_message_each_at_its_own_span():
    """plotly_bytes.spare_bundle: the header names each chart's element key and where its message lies after the
    header; each span reads back as that chart's message, the key its payload carries included."""
    messages = {}
    for seed, key in enumerate(("steps_fig_scores", "steps_fig_weights", "qk_dims")):
        _, fig = _map(8 + 4 * seed, seed)
        messages[key] = plotly_bytes.payload(fig, {}, "/static/plotly.js", key=key)
    bundle = plotly_bytes.spare_bundle(messages)
    n = struct.unpack("<I", bundle[:4])[0]
    spans = json.loads(bundle[4:4 + n])["spare"]
    body = bundle[4 + n:]
    assert [s[0] for s in spans] == list(messages) and spans[-1][2] == len(body)
    for key, start, end in spans:
        assert body[start:end] == messages[key]
        assert plotting.figure_from_bytes(body[start:end])["key"] == key
    assert plotly_bytes.spare_bundle({}) == struct.pack("<I", 13) + b'{"spare": []}'
