"""A result's figures are built once and shared by every session (ui.cache.figure), and the full
garbage collection Streamlit runs after every script run scans only what runs created (it was most of a warm
rerun's time)."""
from __future__ import annotations

import numpy as np
from streamlit.testing.v1 import AppTest


def test_the_server_runs_no_full_collection_after_every_script_run():
    import tomllib
    from pathlib import Path

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text("utf-8"))
    assert config["runner"]["postScriptGC"] is False


def test_a_model_load_freezes_what_is_alive_so_the_collection_after_each_run_scans_little():
    """Streamlit runs gc.collect(2) after every script run; with torch and a model loaded it scanned ~435,000
    objects (240 ms, GIL held). After get_model, everything alive is frozen out of the collector's sight."""
    import gc

    import torch  # noqa: F401
    import transformers  # noqa: F401

    from attnviz.ui.cache import settle_collector

    gc.unfreeze()  # earlier tests of the session may have loaded a model and frozen already
    before = len(gc.get_objects())
    settle_collector()
    try:
        assert before > 100_000 and gc.get_freeze_count() >= before * 0.9
        assert len(gc.get_objects()) < 2_000  # what a full collection still walks
    finally:
        gc.unfreeze()


def _script():
    import numpy as np
    import streamlit as st

    from attnviz.heatmap.figures import focus_figure
    from attnviz.ui.cache import figure
    from attnviz.ui.figure import show_figure

    calls = st.session_state.setdefault("calls", [])

    def counted(*args, **kwargs):
        calls.append(1)
        return focus_figure(*args, **kwargs)

    a = np.full((2, 3, 3), 1 / 3, dtype=np.float32)
    a[1, 1] = [0.0001, 0.0002, 0.9997]
    scale = st.session_state.get("scale", 1.0)
    fig = figure(counted, a * scale, 1, ["x", "y", "z"], direction="out")
    show_figure(fig, key="focus")
    st.session_state["figs"] = st.session_state.get("figs", []) + [fig]


def test_a_figure_is_built_once_per_input_shared_and_never_changed_by_presentation_mode():
    at = AppTest.from_function(_script, default_timeout=180).run()
    assert not at.exception
    at.run()
    assert len(at.session_state["calls"]) == 1  # the second run reused the figure
    first, second = at.session_state["figs"]
    assert first is second
    # already without SI prefixes (plotly would write 0.0001 as "100µ")
    assert first.data[0].colorbar.exponentformat == "e"
    # hover names the token without a per-cell customdata
    assert list(first.data[0].x) == ["0: x", "1: y", "2: z"] and first.data[0].customdata is None
    np.testing.assert_allclose(first.data[0].z[1], [0.0001, 0.0002, 0.9997], rtol=1e-6)

    at.session_state["present"] = True
    at.run()
    assert not at.exception
    assert len(at.session_state["calls"]) == 1
    shared = at.session_state["figs"][-1]
    assert shared is first and shared.layout.font.size is None  # presentation fonts went on a copy
    import json

    from attnviz.ui.figure import PRESENT_FONT

    spec = json.loads(at.get("plotly_chart")[0].proto.spec)  # what the browser got: the enlarged copy
    assert spec["layout"]["font"]["size"] == PRESENT_FONT
    # the enlarged copy is kept with the shared figure, shared and read-only too: shown again, it is not made again
    kept = first._attnviz_presented
    assert kept._attnviz_shared and kept is not first and kept.layout.font.size == PRESENT_FONT
    at.run()
    assert not at.exception
    assert first._attnviz_presented is kept and len(at.session_state["calls"]) == 1
    assert json.loads(at.get("plotly_chart")[0].proto.spec) == spec

    at.session_state["scale"] = 0.5  # other numbers: another figure
    at.run()
    assert len(at.session_state["calls"]) == 2
    assert at.session_state["figs"][-1] is not first
