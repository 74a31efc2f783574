"""Every export of a heatmap keeps its token labels and its real numbers.

The app imports streamlit, which makes its own plotly template the default; that template leaves
axis automargin off, so figures exported on the server (kaleido) cut long tick labels. These tests
import streamlit first, as the app does, and check the geometry of the exported labels."""
import csv
import io
import re
import zipfile

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import streamlit  # noqa: F401  (registers the 'streamlit' plotly template as the default, as in the app)

from attnviz.export import chromium_path, figure_csv, figure_html, figure_image, figures_zip
from attnviz.extract import extract
from attnviz.heatmap.figures import heatmap_figure
from attnviz.heatmap.raster import GridLayout, default_thumb, grid_png
from attnviz.heatmap.figures import grid_figure

TEXT = "The extraordinarily unconventional cat sat on the mat."
pytestmark = pytest.mark.slow  # Chromium renders every export
needs_chromium = pytest.mark.skipif(chromium_path() is None, reason="server-side export needs Chromium")


@pytest.fixture(scope="module")
def result(minilm):
    return extract(minilm, TEXT)


def _svg_size(svg: str) -> tuple[float, float]:
    m = re.search(r'<svg[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"', svg)
    return float(m.group(1)), float(m.group(2))


def _tick_texts(svg: str, axis: str) -> list[tuple[str, float, float, float, float]]:
    """(label, x, y, font size, rotation) of every tick label of the axis ('x' or 'y')."""
    out = []
    for m in re.finditer(rf'<g class="{axis}tick">(<text[^>]*>[^<]*</text>)</g>', svg):
        text = m.group(1)
        label = re.search(r">([^<]*)</text>", text).group(1)
        x = float(re.search(r'\bx="([-\d.]+)"', text).group(1))
        y = float(re.search(r'\by="([-\d.]+)"', text).group(1))
        size = float(re.search(r"font-size: ([\d.]+)px", text).group(1))
        tx = re.search(r"translate\(([-\d.]+),([-\d.]+)\)", text)
        rot = re.search(r"rotate\(([-\d.]+)", text)
        dx, dy = (float(tx.group(1)), float(tx.group(2))) if tx else (0.0, 0.0)
        out.append((label.replace("&amp;", "&"), x + dx, y + dy, size, float(rot.group(1)) if rot else 0.0))
    return out


def _assert_labels_inside(svg: str, row_labels, col_labels):
    """Every token label is drawn whole inside the image: right-aligned y labels need room to
    their left; x labels rotated by -60 degrees hang below their anchor."""
    width, height = _svg_size(svg)
    ys = _tick_texts(svg, "y")
    xs = _tick_texts(svg, "x")
    assert [t[0] for t in ys] == list(row_labels)
    assert [t[0] for t in xs] == list(col_labels)
    for label, x, _, size, _ in ys:
        # a conservative width: 0.45 em per character (narrower than any real font's average)
        assert x - 0.45 * size * len(label) >= 0, f"y label {label!r} starts left of the image (x={x})"
    for label, x, y, size, rot in xs:
        assert rot == pytest.approx(-60)
        drop = 0.45 * size * len(label) * np.sin(np.radians(60))
        assert y + drop <= height, f"x label {label!r} hangs below the image ({y + drop:.0f} > {height:.0f})"
    # (the axis titles' distance from the labels is checked on the rendered SVG in
    # tests/browser/test_export_labels_browser.py, with the browser's real text boxes)


def test_streamlit_template_is_the_default_like_in_the_app():
    assert pio.templates.default == "streamlit"


@needs_chromium
def test_svg_and_zip_exports_show_every_token_label_whole(result):
    tokens = result.tokens
    fig = heatmap_figure(result.attention[0, 0], tokens, tokens, title="Layer 0, head 0")
    svg = figure_image(fig, "svg").decode()
    _assert_labels_inside(svg, tokens, tokens)

    # the page .zip goes through the same layout: as SVG its labels are whole too
    data = figures_zip([("head", fig)], fmt="svg")
    z = zipfile.ZipFile(io.BytesIO(data))
    _assert_labels_inside(z.read("head.svg").decode(), tokens, tokens)


@needs_chromium
def test_zip_png_has_the_export_layout_and_real_numbers(result):
    from PIL import Image

    from attnviz.export import export_ready

    tokens = result.tokens
    fig = heatmap_figure(result.attention[1, 3], tokens, tokens, title="Layer 1, head 3")
    layout = GridLayout(result.n_layers, result.n_heads, default_thumb(result.n_layers, result.n_heads, result.seq_len), 2)
    grid = grid_figure(grid_png(result.attention, layout), layout, attention=result.attention, tokens=tokens)
    data = figures_zip([("all-heads", grid), ("head", fig)], fmt="png", scale=1)
    z = zipfile.ZipFile(io.BytesIO(data))
    png = Image.open(io.BytesIO(z.read("head.png")))
    ready = export_ready(fig)
    assert png.size == (700, ready.layout.height)  # kaleido's width, the export layout's height
    longest = max(len(t) for t in tokens)
    assert ready.layout.margin.l >= 0.45 * 12 * longest  # room for the longest y label
    # numbers.csv: the grid's block of every head and the heatmap, both the model's weights
    text = z.read("numbers.csv").decode()
    assert "trace 1" not in text  # not the click layer's marker coordinates
    blocks = _csv_blocks(text.split("## head")[0].split("## all-heads")[1])
    assert len(blocks) == result.n_layers * result.n_heads
    for (title, cols, rows, values), (layer, head) in zip(blocks, np.ndindex(result.n_layers, result.n_heads)):
        assert title.startswith(f"# layer {layer} head {head}")
        assert cols == [f"{j}:{t}" for j, t in enumerate(tokens)] and rows == cols
        np.testing.assert_allclose(values, result.attention[layer, head], atol=1e-5)
    (_, cols, rows, values), = _csv_blocks(text.split("## head")[1])
    np.testing.assert_allclose(values, result.attention[1, 3], atol=1e-5)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-5)


def _csv_blocks(text: str):
    """[(title, column labels, row labels, values)] of the CSV blocks in text."""
    blocks = []
    for row in csv.reader(io.StringIO(text.strip())):
        if not row:
            continue
        if row[0].startswith("#"):
            blocks.append((row[0], row[1:], [], []))
        else:
            blocks[-1][2].append(row[0])
            blocks[-1][3].append([float(v) for v in row[1:]])
    return [(t, c, r, np.array(v)) for t, c, r, v in blocks]


def test_heatmap_csv_holds_the_models_weights_with_labels(result):
    tokens = result.tokens
    fig = heatmap_figure(result.attention[2, 5], tokens, tokens)
    (_, cols, rows, values), = _csv_blocks(figure_csv(fig))
    assert cols == [f"{j}:{t}" for j, t in enumerate(tokens)] and rows == cols
    np.testing.assert_allclose(values, result.attention[2, 5], atol=1e-5)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-5)


def test_grid_csv_holds_every_heads_weights(result):
    layout = GridLayout(result.n_layers, result.n_heads, 32, 2)
    fig = grid_figure(grid_png(result.attention, layout), layout, attention=result.attention, tokens=result.tokens)
    blocks = _csv_blocks(figure_csv(fig))
    assert len(blocks) == result.n_layers * result.n_heads
    stacked = np.stack([b[3] for b in blocks]).reshape(result.attention.shape)
    np.testing.assert_allclose(stacked, result.attention, atol=1e-5)
    np.testing.assert_allclose(stacked.sum(axis=-1), 1.0, atol=1e-5)


def test_long_heatmap_csv_labels_every_token_not_only_the_ticks(minilm):
    r = extract(minilm, " ".join(f"word{i}" for i in range(100)))
    assert r.seq_len > 100
    fig = heatmap_figure(r.attention[0, 0], r.tokens, r.tokens)
    assert len(fig.layout.xaxis.ticktext) < r.seq_len  # the axis labels every few tokens ...
    (_, cols, rows, values), = _csv_blocks(figure_csv(fig))
    assert cols == [f"{j}:{t}" for j, t in enumerate(r.tokens)]  # ... the CSV every one
    np.testing.assert_allclose(values, r.attention[0, 0], atol=1e-5)


def test_html_export_carries_the_labels_and_the_export_margins(result):
    tokens = result.tokens
    fig = heatmap_figure(result.attention[0, 0], tokens, tokens)
    html = figure_html(fig)
    spec = re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{"responsive"', html, re.S)
    assert spec is not None
    import json

    layout = json.loads(spec.group(2))
    assert layout["xaxis"]["ticktext"] == list(tokens) and layout["yaxis"]["ticktext"] == list(tokens)
    assert layout["xaxis"]["automargin"] is True and layout["yaxis"]["automargin"] is True
    assert layout["margin"]["l"] >= 0.45 * 12 * max(len(t) for t in tokens)


def _plot_top(svg: str) -> float:
    return float(re.search(r'<g class="overplot"><g class="xy" transform="translate\([-\d.]+,([-\d.]+)\)', svg).group(1))


@needs_chromium
def test_svg_exports_carry_the_figures_title_above_the_plot():
    from attnviz.metrics.figures import MAX_MATRIX_SIDE, matrix_heatmap

    n = MAX_MATRIX_SIDE + 8  # long: the title gets a second line (blocks averaged, colours clipped)
    tokens = [f"w{i}" for i in range(n)]
    fig = matrix_heatmap(np.random.default_rng(1).random((n, n)), tokens, tokens,
                         title="Rollout through layers 0–5")
    svg = figure_image(fig, "svg").decode()
    first = re.match(r"<svg\b[^>]*>(<title>[^<]*</title>)", svg)
    assert first, "the SVG has no <title> as its first element"
    assert first.group(1).startswith("<title>Rollout through layers 0–5 · 200 tokens: 2x2 blocks averaged")
    # the drawn title's last line sits above the plot area
    g = re.search(r'<g class="g-gtitle">(.*?)</g>', svg).group(1)
    base = float(re.search(r'\by="([\d.]+)"', g).group(1))
    size = float(re.search(r"font-size: ([\d.]+)px", g).group(1))
    lines = g.count('class="line"')
    assert lines == 2
    assert base + 1.3 * size * (lines - 1) + 0.3 * size < _plot_top(svg)

    # a figure without a title of its own is named by the title the page gives its download
    untitled = go.Figure(go.Bar(x=[0, 1], y=[1, 2]))
    assert "<title>mixing ratios</title>" in figure_image(untitled, "svg", title="mixing ratios").decode()
    data = figures_zip([("all-heads", untitled), ("rollout", fig)], fmt="svg")
    z = zipfile.ZipFile(io.BytesIO(data))
    assert "<title>all-heads</title>" in z.read("all-heads.svg").decode()
    assert "<title>Rollout through layers 0–5 · " in z.read("rollout.svg").decode()


@needs_chromium
def test_exported_lines_take_the_colours_the_page_shows():
    """Streamlit's template colours traces with placeholders (#000001, #000002, ...) that only its web page
    replaces: a server-side export draws them in the light theme's colours, one per series, as on the page."""
    from attnviz.metrics.figures import layer_lines

    fig = layer_lines({name: np.arange(3.0) + i for i, name in enumerate("abcd")}, title="Lines", ytitle="y")
    svg = figure_image(fig, "svg").decode()
    strokes = re.findall(r'class="js-line"[^>]*stroke: rgb\(([^)]*)\)', svg)
    colours = list(dict.fromkeys(tuple(int(v) for v in s.split(",")) for s in strokes))
    assert colours == [(0, 104, 201), (131, 201, 255), (255, 43, 43), (255, 171, 171)]  # #0068c9 #83c9ff ...


def test_a_render_that_never_finishes_is_tried_again_then_named_in_a_plain_message():
    """kaleido can wait without end for a Chromium that came up without its page: the render is cut after its time,
    tried once more, and then the export says so instead of hanging the page."""
    import threading

    from attnviz.errors import AttnvizError
    from attnviz.export import rendered

    tries, never = [], threading.Event()

    def hangs():
        tries.append(1)
        never.wait()

    with pytest.raises(AttnvizError, match="did not finish within 0 s twice"):
        rendered(hangs, 0.2, "PNG export")
    assert len(tries) == 2
    answers = iter([None, b"png"])

    def second_try_answers():  # the first try hangs, the second (a fresh Chromium) draws
        if next(answers) is None:
            never.wait()
        return b"png"

    assert rendered(second_try_answers, 0.2, "PNG export") == b"png"
    with pytest.raises(ValueError, match="bad figure"):  # an error inside the render reaches the caller as it is
        rendered(lambda: (_ for _ in ()).throw(ValueError("bad figure")), 5, "PNG export")
    never.set()
