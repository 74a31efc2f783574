"""Ablation page: a last-layer ablation gets a sentence instead of an empty figure; the
effect's label reads 'KL divergence' (checked with a causal model in the unit tests)."""
import pytest

from tests.app.apptest import open_page
from tests.figures import app_figures, decode

LAYER_TITLE = "How much each layer's attention moved"


def _titles(at):
    return [f["layout"]["title"]["text"] for f in app_figures(at)]


def test_last_layer_ablation_explains_instead_of_an_empty_figure():
    at = open_page("app_pages/ablation.py", ablated_by_model={"minilm": {(5, 3)}})  # MiniLM: layers 0-5
    assert not at.exception
    assert not any(LAYER_TITLE in t for t in _titles(at))
    notes = [i.value for i in at.info if "later attention" in i.value]
    assert len(notes) == 1 and "layer 5" in notes[0] and "last" in notes[0]
    assert float(at.metric[0].value) > 0  # the output does change: the embedding moved


def test_earlier_ablation_still_draws_the_layer_figure():
    at = open_page("app_pages/ablation.py", ablated_by_model={"minilm": {(4, 3), (5, 1)}})
    assert not at.exception
    fig = next(f for f in app_figures(at) if LAYER_TITLE in f["layout"]["title"]["text"])
    line = decode(fig["data"][0]["y"])
    assert line[:5].max() == pytest.approx(0, abs=1e-6) and line[5] > 0  # only layer 5 reacts
    assert not [i.value for i in at.info if "later attention" in i.value]


@pytest.mark.slow
def test_causal_model_prediction_table_is_readable_and_says_kl():
    at = open_page("app_pages/ablation.py", timeout=300, model_choice="smollm2", text="Line one.\nLine two.\nLine three.",
                   ablated_by_model={"smollm2": {(0, 0), (1, 2)}})
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "KL divergence of the next-token distribution (nats)" in labels, labels
    table = at.dataframe[0].value
    cells = [str(v) for col in ("full model", "with heads off") for v in table[col]]
    assert len(cells) == 10
    assert not any(m in c for c in cells for m in ("Ġ", "Ċ", "▁")), cells
    assert cells[0].startswith("⏎ (new line) (")  # the model's favourite next token here is a line break
