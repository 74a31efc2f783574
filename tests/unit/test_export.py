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


@pytest.mark.slow  # Chromium renders every figure
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


def test_result_npz_holds_the_tokens_as_a_plain_string_array(minilm):
    r = extract(minilm, "Naïve cats don't sit; 1,234 dogs do.")
    z = np.load(io.BytesIO(result_npz(r)), allow_pickle=False)
    assert z["tokens"].dtype.kind == "U"  # a string array: no JSON header to decode, no pickle
    assert z["tokens"].tolist() == list(r.tokens)
    assert len(z["tokens"]) == z["attention"].shape[-1]
    assert "decoder_tokens" not in z  # an encoder has none
    assert load_result_npz(result_npz(r)).tokens == r.tokens


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_rollout_csv_has_every_value_at_full_precision_and_named_axes(minilm):
    from attnviz.metrics.figures import matrix_heatmap
    from attnviz.metrics.rollout import fuse_heads, rollout_fused

    r = extract(minilm, "The cat sat on the mat because it was tired.")
    rolled = rollout_fused(fuse_heads(r.attention, "mean"))[-1]
    fig = matrix_heatmap(rolled, r.tokens, r.tokens, title="Rollout through layers 0–5", colorbar="share",
                         xtitle="input token", ytitle="output token")
    rows = _rows(figure_csv(fig))
    assert rows[0] == ["# Rollout through layers 0–5 (rows: output token, columns: input token)"] + [
        f"{j}:{t}" for j, t in enumerate(r.tokens)]
    assert [row[0] for row in rows[1:]] == [f"{i}:{t}" for i, t in enumerate(r.tokens)]
    back = np.array([[np.float32(v) for v in row[1:]] for row in rows[1:]], dtype=np.float32)
    np.testing.assert_array_equal(back, rolled)  # every value reads back exactly (not rounded to 4 decimals)
    assert any(len(v.split(".")[-1]) > 4 for row in rows[1:] for v in row[1:])


def test_long_matrix_csv_keeps_every_position_although_the_figure_is_block_averaged():
    from attnviz.metrics.figures import MAX_MATRIX_SIDE, matrix_heatmap

    n = MAX_MATRIX_SIDE + 10
    m = np.random.default_rng(0).random((n, n))
    fig = matrix_heatmap(m, [f"t{i}" for i in range(n)], [f"t{i}" for i in range(n)], title="Rollout")
    assert np.asarray(fig.data[0].z).shape[0] < n  # the picture is pooled
    rows = _rows(figure_csv(fig))
    assert len(rows) == n + 1 and len(rows[1]) == n + 1
    assert rows[0][0] == "# Rollout (rows: query (attending), columns: key (attended to))"
    assert [float(v) for v in rows[7][1:]] == m[6].tolist()  # float64 values round-trip exactly


def test_every_generic_figure_csv_names_its_axes_at_full_precision():
    from attnviz.metrics.figures import head_grid, layer_lines, token_bars

    values = np.array([0.123456789, 0.5, 1 / 3])
    rows = _rows(figure_csv(token_bars(values, ["a", "b", "c"], title="Share", ytitle="share")))
    assert rows[0] == ["trace", "token", "share"]
    assert [float(r[2]) for r in rows[1:]] == values.tolist()

    rows = _rows(figure_csv(layer_lines({"weights": np.array([0.25, 1 / 7])}, title="Mixing",
                                        ytitle="mixing ratio (%)")))
    assert rows[0] == ["trace", "layer", "mixing ratio (%)"]
    assert rows[1:] == [["weights", "0", "0.25"], ["weights", "1", repr(1 / 7)]]

    grid = np.arange(6, dtype=np.float32).reshape(2, 3) / 7
    rows = _rows(figure_csv(head_grid(grid, title="Mean entropy per head", colorbar="nats")))
    assert rows[0] == ["# Mean entropy per head (rows: layer, columns: head)", "0", "1", "2"]
    assert len(rows) == 3  # the layers only: not the transparent markers that catch clicks
    np.testing.assert_array_equal(np.array([[np.float32(v) for v in r[1:]] for r in rows[1:]]), grid)


def test_role_map_csv_lists_every_heads_scores():
    from attnviz.metrics.figures import role_map

    best = np.array([[0, 1], [2, -1]])
    scores = np.array([[[0.5, 0.1], [0.2, np.nan]], [[0.25, 0.6], [0.1, 0.2]], [[0.0, 0.3], [0.7, 0.1]]],
                      dtype=np.float32)  # (role, layer, head)
    rows = _rows(figure_csv(role_map(best, np.nanmax(scores, 0), scores, ["a", "b", "c"], title="Roles")))
    assert rows[0] == ["layer", "head", "strongest role", "a score", "b score", "c score"]
    assert rows[1:] == [["0", "0", "a", "0.5", "0.25", "0.0"], ["0", "1", "b", "0.1", "0.6", "0.3"],
                        ["1", "0", "c", "0.2", "0.1", "0.7"], ["1", "1", "no clear role", "", "0.2", "0.1"]]


def test_trust_figures_csv_keep_every_score_at_full_precision():
    from attnviz.attribution.faithfulness import Curves
    from attnviz.attribution.figures import methods_heatmap, perturbation_curves, randomisation_bars, spearman_heatmap

    third, tiny = 1 / 3, 1.234567891e-7
    rows = _rows(figure_csv(methods_heatmap({"IG": np.array([third, -tiny]), "attention": np.array([0.5, 2 / 7])},
                                            ["a", "b"], title="Scores")))
    assert rows[0] == ["method", "a (0)", "b (1)"]
    assert rows[1:] == [["IG", repr(third), repr(-tiny)], ["attention", "0.5", repr(2 / 7)]]

    rows = _rows(figure_csv(spearman_heatmap(["IG", "flat"], np.array([[1.0, np.nan], [np.nan, 1.0]]) * third,
                                             title="Agreement")))
    assert rows == [["method", "IG", "flat"], ["IG", repr(third), "undefined"], ["flat", "undefined", repr(third)]]

    rows = _rows(figure_csv(randomisation_bars({"IG": tiny, "flat": float("nan")}, title="Randomised")))
    assert rows == [["method", "spearman"], ["IG", repr(tiny)], ["flat", "undefined"]]

    c = Curves("IG", (0.0, 0.1), (0, 1), np.array([third, tiny]), np.array([0.0, 0.5]), 1.0, 0.0, 0.0)
    rows = _rows(figure_csv(perturbation_curves({"IG": c}, "deletion", ytitle="logit")))
    assert rows == [["method", "fraction", "k", "deletion"], ["IG", "0.0", "0", repr(third)], ["IG", "0.1", "1", repr(tiny)]]


def test_logit_lens_csv_keeps_each_probability_as_the_model_gave_it():
    from types import SimpleNamespace

    from attnviz.logit_lens.figures import lens_csv

    probs = np.array([[[0.123456789, 1 / 3]]], dtype=np.float32)  # (state, position, rank)
    lens = SimpleNamespace(n_states=1, seq_len=1, tokens=("Hi",), index=lambda i: i,
                           top_labels=np.array([[["there", "!"]]]), top_probs=probs)
    rows = _rows(lens_csv(lens, 0, 1, 2))
    assert rows[0][-1] == "probability"
    assert [np.float32(r[-1]) for r in rows[1:]] == list(probs[0, 0])  # exact float32 values read back
    assert rows[1][-1] == "0.12345679" and rows[2][-1] == "0.33333334"  # not the 6 digits of "0.123457"


def test_training_figures_csv_hold_every_weight_at_full_precision():
    from types import SimpleNamespace

    from attnviz.training.figures import animation, attention_heatmap, heads_grid

    rng = np.random.default_rng(3)
    a = rng.random((2, 1, 2, 3, 3)).astype(np.float32)  # (frame, layer, head, query, key)
    a /= a.sum(-1, keepdims=True)
    tokens = ("a", "b", "<s>")
    run = SimpleNamespace(attention={"self": a}, tokens=tokens, decoder_tokens=None, n_frames=2,
                          frame_steps=np.array([0, 40]))

    def blocks(text):
        out = {}
        for row in _rows(text):
            if row[0].startswith("#"):
                title = row[0]
                assert row[1:] == ["0:a", "1:b", "2:<s>"]
                out[title] = []
            else:
                out[title].append([np.float32(v) for v in row[1:]])
        return {t: np.array(v, dtype=np.float32) for t, v in out.items()}

    got = blocks(figure_csv(attention_heatmap(a[1, 0, 1], tokens, tokens, title="step 40")))
    np.testing.assert_array_equal(got["# step 40 (rows: query (attending), columns: key (attended to))"], a[1, 0, 1])
    got = blocks(figure_csv(heads_grid(run, "self", 1)))
    assert len(got) == 2
    np.testing.assert_array_equal(got["# layer 0 head 1 (rows: query (attending), columns: key (attended to))"],
                                  a[1, 0, 1])
    got = blocks(figure_csv(animation(run, "self", 0, None)))
    np.testing.assert_array_equal(got["# step 40 (rows: query (attending), columns: key (attended to))"],
                                  a[1, 0].mean(axis=0))  # every frame, not the 3 decimals the animation draws
