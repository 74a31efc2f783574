"""Heatmap details: hover names tokens at any length with small weights in
scientific notation, the log colour bar is labelled in real weights at log positions, masked
(future) cells of causal models are blank, and no number format uses SI prefixes."""
import csv
import io
import json

import numpy as np
import pytest
from plotly.colors import get_colorscale, sample_colorscale

from attnviz.export import figure_csv
from attnviz.extract import extract
from attnviz.plotting import WEIGHT_FORMAT, log_ticks, no_si_prefixes
from attnviz.heatmap.figures import focus_figure, heatmap_figure
from tests.tiny_models import tiny_loaded


def _softmax_rows(n: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(scale=4.0, size=(n, n))
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def test_hover_names_tokens_at_200_tokens_without_per_cell_payload():
    n = 200
    tokens = [f"w{i}" for i in range(n)]
    tokens[7] = tokens[9] = "the"  # repeated tokens stay separate rows
    fig = heatmap_figure(_softmax_rows(n), tokens, tokens)
    trace = fig.data[0]
    assert list(trace.x) == [f"{i}: {t}" for i, t in enumerate(tokens)]
    assert list(trace.y) == [f"{i}: {t}" for i, t in enumerate(tokens)]
    assert len(set(trace.y)) == n
    assert "%{y}" in trace.hovertemplate and "%{x}" in trace.hovertemplate
    assert f"%{{z:{WEIGHT_FORMAT}}}" in trace.hovertemplate and WEIGHT_FORMAT.endswith("g")
    assert trace.customdata is None
    # labels per axis, not per cell: the figure is about the size of its weights
    size = len(fig.to_json())
    assert size < 8 * n * n + 50_000, size
    # the axes still label every few tokens only, at the right rows
    assert len(fig.layout.yaxis.ticktext) < n
    for val, text in zip(fig.layout.yaxis.tickvals, fig.layout.yaxis.ticktext):
        assert val.split(": ", 1)[1] == text


def test_weight_format_writes_small_weights_in_scientific_notation():
    # d3's "~g" with 4 significant digits, as plotly formats %{z:.4~g}: Python's "g" is the same
    digits = int(WEIGHT_FORMAT.strip(".~g"))
    assert f"{1.234e-5:.{digits}g}" == "1.234e-05"
    assert f"{0.3397:.{digits}g}" == "0.3397"
    assert ".4f" not in heatmap_figure(np.eye(3, dtype=np.float32), "abc", "abc").data[0].hovertemplate
    a = np.random.default_rng(1).random((2, 4, 4)).astype(np.float32)
    assert WEIGHT_FORMAT in focus_figure(a, 1, list("abcd")).data[0].hovertemplate


def test_log_colour_bar_is_labelled_in_weights_at_log_positions():
    m = _softmax_rows(12, seed=3)
    floor, top = 1e-4, float(m.max())
    fig = heatmap_figure(m, list("abcdefghijkl"), list("abcdefghijkl"), zmax=top, log_floor=floor)
    heat = fig.data[0]
    np.testing.assert_array_equal(np.asarray(heat.z), m)  # exact weights stay the z values
    assert heat.showscale is False
    bar_trace = [t for t in fig.data if t.type == "scatter" and t.marker.showscale][0]
    bar = bar_trace.marker.colorbar
    weights = [float(t) for t in bar.ticktext]
    np.testing.assert_allclose(bar.tickvals, np.log10(weights), rtol=1e-6)
    # ticks are spread over the bar (log positions), not squeezed at its bottom
    assert bar_trace.marker.cmin == pytest.approx(np.log10(floor)) and bar_trace.marker.cmax == pytest.approx(np.log10(top))
    assert {1e-4, 1e-3, 1e-2, 0.1} <= {round(w, 12) for w in weights}
    # the bar's colour at log10(w) is the heatmap's colour for weight w
    scale = heat.colorscale
    stops = np.array([s[0] for s in scale])
    for w in (1e-3, 1e-2, 0.1):
        i = int(np.argmin(np.abs(stops - w / top)))
        pos = (np.log10(stops[i] * top) - np.log10(floor)) / (np.log10(top) - np.log10(floor))
        expected = sample_colorscale(get_colorscale("Viridis"), [pos])[0]
        assert scale[i][1] == expected
    # the CSV holds the weights, not the colour-bar helper
    rows = list(csv.reader(io.StringIO(figure_csv(fig))))
    np.testing.assert_allclose(np.array([[float(v) for v in r[1:]] for r in rows[1:]]), m, rtol=1e-5)


def test_log_ticks_cover_the_range():
    vals, text = log_ticks(1e-5, 0.8)
    assert vals[0] == pytest.approx(1e-5) and vals[-1] <= 0.8
    assert text[0] == "1e-5" and "0.1" in text and all("µ" not in t for t in text)


def test_causal_future_cells_are_blank_not_zero():
    loaded = tiny_loaded("llama")
    r = extract(loaded, "the cat sat on the mat")
    assert r.facts.causal
    a = r.attention[1, 2]
    n = a.shape[0]
    future = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.all(a[future] == 0)  # the model's masked weights are exactly 0
    fig = heatmap_figure(a, r.tokens, r.tokens, causal=r.facts.causal)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[future]).all()
    np.testing.assert_allclose(z[~future], a[~future], rtol=1e-6)
    assert fig.data[0].hoverongaps is False
    assert "masked" in fig.layout.xaxis.title.text  # the figure says what blank means
    # hidden special tokens: positions, not indices, decide what is in the future
    rows, cols = np.arange(1, n), np.arange(1, n)
    fig2 = heatmap_figure(a[1:, 1:], r.tokens, r.tokens, rows=rows, cols=cols, causal=True)
    np.testing.assert_array_equal(np.isnan(np.asarray(fig2.data[0].z, dtype=float)), future[1:, 1:])
    # the CSV keeps the model's 0 for masked cells, and rows sum to 1
    rows_csv = list(csv.reader(io.StringIO(figure_csv(fig))))
    values = np.array([[float(v) for v in row[1:]] for row in rows_csv[1:]])
    np.testing.assert_allclose(values, a, atol=1e-6)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-5)
    # an encoder's heatmap is not masked
    enc = heatmap_figure(a, r.tokens, r.tokens)
    assert not np.isnan(np.asarray(enc.data[0].z, dtype=float)).any()


def test_no_si_prefixes_on_weight_axes_and_colour_bars():
    import plotly.graph_objects as go

    heat = heatmap_figure(_softmax_rows(5), list("abcde"), list("abcde"))
    assert heat.data[0].colorbar.exponentformat == "e"
    a = np.random.default_rng(1).random((2, 4, 4)).astype(np.float32)
    assert focus_figure(a, 1, list("abcd")).data[0].colorbar.exponentformat == "e"
    fig = go.Figure([go.Bar(x=["a", "b"], y=[1e-4, 2e-4]),
                     go.Scatter(x=[0], y=[0], marker=dict(color=[1e-4], showscale=True)),
                     go.Scatter(x=[0], y=[0], marker=dict(color="white"))])
    spec = json.loads(no_si_prefixes(fig).to_json())
    assert spec["layout"]["xaxis"]["exponentformat"] == "e" and spec["layout"]["yaxis"]["exponentformat"] == "e"
    assert spec["data"][1]["marker"]["colorbar"]["exponentformat"] == "e"
    assert "colorbar" not in spec["data"][2]["marker"]  # no colour-bar spec where no bar is shown
    assert "coloraxis" not in spec["layout"]  # no unused colour axis (it would draw a second colour bar)
