"""One interface for dense and long results: DenseAttention reads a dense AttentionResult through
LongAttention's interface; its maps, rows, zoom and top-k equal a recording's, and the one summaries pass gives
the dense functions' numbers on it (also for a model whose q and k cannot be recorded)."""
import numpy as np
import pytest

from attnviz.errors import AttentionUnavailable, BadInput
from attnviz.examples import long_text
from attnviz.extract import extract
from attnviz.long.dense import DenseAttention
from attnviz.long.record import record
from attnviz.long.summaries import summarise
from tests.tiny_models import tiny_loaded
from tests.unit.test_long import _check_summaries, llama  # noqa: F401  (the fixture)

TEXT = long_text(2000)


@pytest.mark.parametrize("which", ["minilm", "llama"])
def test_dense_reads_like_a_recording_and_summarises_alike(which, minilm, llama):
    loaded = minilm if which == "minilm" else llama
    r, la = extract(loaded, TEXT, max_tokens=300), record(loaded, TEXT, max_tokens=300)
    d = DenseAttention(r)
    assert (d.n_layers, d.n_heads, d.seq_len, d.tokens) == (la.n_layers, la.n_heads, la.seq_len, la.tokens)
    assert (d.causal == la.causal).all()
    np.testing.assert_allclose(d.head(1, 3), la.head(1, 3), atol=1e-5)
    np.testing.assert_allclose(d.rows(0, 2, 10, 20), la.rows(0, 2, 10, 20), atol=1e-5)
    np.testing.assert_allclose(d.window(1, 0, 100, 140, 80, 120), la.window(1, 0, 100, 140, 80, 120), atol=1e-5)
    keys, w = d.top_k(1, 1, 50, 60, 5)
    lkeys, lw = la.top_k(1, 1, 50, 60, 5)
    np.testing.assert_allclose(w, lw, atol=1e-5)
    assert (keys[:, 0] == lkeys[:, 0]).all()
    a, b = summarise(d, tiles=20), summarise(la, tiles=20)
    np.testing.assert_allclose(a.nats, b.nats, atol=1e-4)
    np.testing.assert_allclose(a.sink, b.sink, atol=1e-5)
    np.testing.assert_allclose(a.mean_distance, b.mean_distance, rtol=1e-4)
    np.testing.assert_allclose(a.roles.scores, b.roles.scores, atol=1e-5, equal_nan=True)
    np.testing.assert_allclose(a.pooled.mean, b.pooled.mean, atol=1e-6)


def test_a_model_that_cannot_be_recorded_is_summarised_from_its_dense_weights():
    t5 = tiny_loaded("t5")
    with pytest.raises(AttentionUnavailable):
        record(t5, "The cat sat on the mat because it was tired.")
    r = extract(t5, "The cat sat on the mat because it was tired.")
    d = DenseAttention(r)
    _check_summaries(r, d, np.ones((r.seq_len, r.seq_len), bool), tiles=4)
    with pytest.raises(BadInput, match="Head 9 does not exist"):
        d.head(0, 9)
