"""Comparing two attention results: lengths, differences and per-head distances."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.extract import extract
from attnviz.metrics.compare import check_same_length, check_same_tokens, difference, head_distance, row_distance


def test_difference_and_row_distance_by_hand():
    a = np.array([[1.0, 0.0], [0.5, 0.5]], dtype=np.float32)
    b = np.array([[0.0, 1.0], [0.5, 0.5]], dtype=np.float32)
    np.testing.assert_allclose(difference(a, b), [[1, -1], [0, 0]])
    assert row_distance(a, b) == pytest.approx(0.5)  # row 0 disjoint (1), row 1 identical (0)
    assert row_distance(a, a) == pytest.approx(0.0)
    with pytest.raises(BadInput):
        difference(a, np.ones((3, 3)))


def test_two_sentences_on_minilm(minilm):
    a = extract(minilm, "The cat sat on the mat because it was tired.")
    b = extract(minilm, "The dog sat on the mat because it was tired.")
    same = extract(minilm, "The cat sat on the mat because it was tired.")
    assert head_distance(a, same).max() == pytest.approx(0.0, abs=1e-6)
    dist = head_distance(a, b)
    assert dist.shape == (6, 12) and dist.min() > 0 and dist.max() < 1
    with pytest.raises(BadInput, match="different tokens"):
        check_same_tokens(a, b)
    longer = extract(minilm, "The cat sat on the mat because it was very tired.")
    with pytest.raises(BadInput, match="different lengths"):
        check_same_length(a, longer)
    with pytest.raises(BadInput, match=r"different tokens \(13 and 14 tokens: their tokenizers differ\)"):
        check_same_tokens(a, longer)  # two tokenizers: their token counts differ, and editing the text cannot help
    with pytest.raises(BadInput, match="different lengths"):
        head_distance(a, longer)
