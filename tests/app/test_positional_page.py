"""AppTest of the positional-encodings page: every tab runs, shows real numbers, handles bad input."""
from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.figures import decode

PAGE = "app_pages/positional.py"


def _z(spec: dict, trace: int = 0, key: str = "z") -> np.ndarray:
    """A trace array from a plotly spec (plain list or plotly's base64 typed array)."""
    return np.asarray(decode(spec["data"][trace][key]), dtype=float)


@pytest.fixture(scope="module")
def at():
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    app.run()
    app.switch_page(PAGE)
    app.run()
    assert not app.exception
    return app


def _open(at, tab: str) -> None:
    """Select a tab (the tabs are bound to session state key pe_tab) and rerun."""
    at.session_state["pe_tab"] = tab
    at.run()
    assert not at.exception, at.exception


def _specs(at):
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_sinusoidal_tab(at):
    _open(at, "Sinusoidal")
    specs = _specs(at)
    assert len(specs) == 5
    table = _z(specs[0])
    assert table.shape == (128, 128)
    assert table[1, 0] == pytest.approx(np.sin(1.0), abs=1e-6) and table[0, 1] == pytest.approx(1.0)
    md = " ".join(m.value for m in at.markdown)
    assert "largest |PE(pos+k) − M_k·PE(pos)|" in md
    at.number_input(key="pe_shift").set_value(9).run()
    at.number_input(key="pe_dmodel").set_value(65).run()
    assert any("must be even" in w.value for w in at.warning)
    at.number_input(key="pe_dmodel").set_value(128).run()
    assert not at.warning
    assert at.number_input(key="pe_shift").value == 9  # kept while the odd d_model hid it
    assert any("k = 9" in s["layout"]["title"]["text"] for s in _specs(at) if s["layout"].get("title"))


def test_learned_tab_shows_minilm_table(at):
    _open(at, "Learned")
    specs = _specs(at)
    assert len(specs) == 6
    table = _z(specs[0])
    assert table.shape == (256, 192)  # 512 x 384 as 2 x 2 block means
    from attnviz.models import load_model

    w = load_model("minilm").model.embeddings.position_embeddings.weight.detach().numpy()
    assert table[0, 0] == pytest.approx(w[:2, :2].mean(), abs=1e-6)
    sizes = [len(c.proto.spec) for c in at.get("plotly_chart")]
    assert max(sizes) < 450_000 and sum(sizes) < 1_200_000, sizes
    md = " ".join(m.value for m in at.markdown)
    assert "512 positions x 384 dimensions = 196,608" in md and "Positions past 511 do not exist" in md


def test_rope_tab(at):
    _open(at, "RoPE")
    specs = _specs(at)
    assert len(specs) == 5
    df = at.dataframe[0].value
    vals = df["value"].to_numpy()
    assert np.allclose(vals, vals[0], atol=1e-9)  # the three scores agree
    at.number_input(key="pe_rope_d").set_value(63).run()
    assert any("must be even" in w.value for w in at.warning)
    at.number_input(key="pe_rope_d").set_value(64).run()


def test_alibi_tab(at):
    _open(at, "ALiBi")
    slopes = _z(_specs(at)[0], key="y")
    assert np.allclose(slopes, [2.0 ** -k for k in range(1, 9)])
    at.number_input(key="pe_alibi_heads").set_value(12).run()
    assert not at.exception
    slopes = _z(_specs(at)[0], key="y")
    assert np.allclose(slopes[8:], [2 ** -0.5, 2 ** -1.5, 2 ** -2.5, 2 ** -3.5])
    at.number_input(key="pe_alibi_heads").set_value(8).run()


def test_why_positions_tab(at):
    _open(at, "Why positions")
    assert len(at.get("plotly_chart")) == 3
    assert float(at.metric[0].value) < 1e-12 and at.success
    at.radio(key="pe_eq_scheme").set_value("sinusoidal").run()
    assert float(at.metric[0].value) > 1e-3 and not at.success
    at.text_input(key="pe_eq_text").set_value("hello").run()
    assert any("at least two words" in w.value for w in at.warning)
    at.text_input(key="pe_eq_text").set_value("the dog bites the man").run()
    at.radio(key="pe_eq_scheme").set_value("none").run()


def test_comparison_tab(at):
    _open(at, "Comparison")
    text = at.table[0].value.to_string()
    assert "1024" in text and "R_(n-m)" in text and "YaRN" in text


@pytest.mark.slow
def test_smollm2_is_told_plainly():
    """A RoPE model in the sidebar: the Learned tab says it has no table (slow: loads SmolLM2)."""
    pytest.importorskip("gguf")
    from attnviz.models.registry import PACKAGED, package_dir

    if not package_dir(PACKAGED["smollm2"].package):
        pytest.skip("SmolLM2 is not installed")
    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    app.session_state["model_choice"] = "smollm2"
    app.run()
    app.switch_page(PAGE)
    app.session_state["pe_tab"] = "Learned"
    app.run()
    assert not app.exception
    assert any("smollm2 has no position-embedding matrix" in i.value and "RoPE" in i.value for i in app.info)
