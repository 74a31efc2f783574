"""The CSV behind the Rollout page's figures: every value at full precision, both axes named."""
import csv
import io

import numpy as np

from attnviz.export import figure_csv
from tests.app.apptest import open_page


def test_rollout_page_csv_has_full_precision_and_named_axes(minilm):
    from attnviz.extract import extract
    from attnviz.metrics.rollout import fuse_heads, rollout_fused

    at = open_page("app_pages/rollout.py")
    figures = {name: fig for name, fig, _ in at.session_state["_page_figures"].values()}  # name -> figure
    name = next(n for n in figures if n.startswith("rollout-through-layers"))
    rows = list(csv.reader(io.StringIO(figure_csv(figures[name]))))
    assert rows[0][0] == "# Rollout through layers 0–5 (rows: output token, columns: input token)"
    r = extract(minilm, at.session_state["text"])
    assert rows[0][1:] == [f"{j}:{t}" for j, t in enumerate(r.tokens)]
    expected = rollout_fused(fuse_heads(r.attention, "mean"))[-1]
    got = np.array([[float(v) for v in row[1:]] for row in rows[1:]])
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert np.abs(got - np.round(got, 4)).max() > 1e-6  # more than 4 decimals
