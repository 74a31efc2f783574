"""Exports: CSV numbers of a figure, standalone HTML, .npz round trip."""
import csv
import io

import numpy as np
import pytest

from attnviz.errors import AttnvizError
from attnviz.export import figure_csv, figure_html, load_result_npz, result_npz
from attnviz.extract import extract
from attnviz.heatmap.figures import heatmap_figure


def test_heatmap_csv_has_exact_weights_and_token_labels():
    m = np.array([[0.25, 0.75], [0.6, 0.4]], dtype=np.float32)
    rows = list(csv.reader(io.StringIO(figure_csv(heatmap_figure(m, ["the", "the"], ["the", "the"])))))
    assert rows[0][1:] == ["0:the", "1:the"]  # repeated tokens stay separate columns
    assert rows[1] == ["0:the", "0.25", "0.75"]
    assert rows[2] == ["1:the", "0.6", "0.4"]


def test_log_colour_keeps_exact_weights_in_export():
    m = np.array([[0.001, 0.999], [0.5, 0.5]], dtype=np.float32)
    fig = heatmap_figure(m, ["a", "b"], ["a", "b"], zmax=0.999, log_floor=1e-4)
    rows = list(csv.reader(io.StringIO(figure_csv(fig))))
    assert rows[1][1:] == ["0.001", "0.999"]


def test_standalone_html_needs_no_network():
    html = figure_html(heatmap_figure(np.eye(2, dtype=np.float32), ["a", "b"], ["a", "b"]))
    import re

    assert re.search(r"<script[^>]*\bsrc=", html) is None  # no external script: plotly.js is inline
    assert "Plotly.newPlot" in html
    assert len(html) > 1_000_000  # plotly.js is inlined


def test_result_npz_round_trip(minilm):
    r = extract(minilm, "I went to the bank.", "The river was wide.")
    back = load_result_npz(result_npz(r))
    np.testing.assert_array_equal(back.attention, r.attention)
    assert back.tokens == r.tokens and back.token_ids == r.token_ids
    np.testing.assert_array_equal(back.segment_ids, r.segment_ids)
    assert back.facts == r.facts and back.truncation == r.truncation and back.text_pair == r.text_pair


def test_foreign_npz_is_a_plain_error(tmp_path):
    buf = io.BytesIO()
    np.savez(buf, x=np.zeros(3))
    with pytest.raises(AttnvizError, match="not an attnviz result"):
        load_result_npz(buf.getvalue())
    with pytest.raises(AttnvizError):
        load_result_npz(b"garbage bytes")


def test_figures_zip_renders_every_figure(tmp_path):
    import zipfile

    from attnviz.export import figures_zip

    figs = [("a", heatmap_figure(np.eye(3, dtype=np.float32), list("xyz"), list("xyz"))),
            ("a", heatmap_figure(np.full((2, 2), 0.5, np.float32), list("pq"), list("pq")))]
    z = zipfile.ZipFile(io.BytesIO(figures_zip(figs)))
    names = sorted(z.namelist())
    assert names == ["a-2.png", "a.png", "numbers.csv"]
    assert z.read("a.png")[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    w, h = Image.open(io.BytesIO(z.read("a.png"))).size
    assert w >= 1000 and h >= 600  # scale 2 of the figure's layout size
    assert "0:x" in z.read("numbers.csv").decode()
