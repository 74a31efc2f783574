"""Unit tests for the lab defects of issue 17: typed temperatures, the KV cache's steps, the quiz order."""
import numpy as np
import pytest

from attnviz.errors import BadInput
from attnviz.lab import lookup as lk


@pytest.mark.parametrize("typed, expected, clamped", [
    ("0.3", 0.3, False), (" 5 ", 5.0, False), ("1000", 1000.0, False), ("0.001", 0.001, False),
    ("1e9", lk.T_MAX, True), ("inf", lk.T_MAX, True), ("1e400", lk.T_MAX, True),
    ("1e-9", lk.T_MIN, True), ("1e-300", lk.T_MIN, True),
])
def test_read_temperature_clamps_into_range(typed, expected, clamped):
    t, note = lk.read_temperature(typed)
    assert t == expected and np.isfinite(t)
    assert (note is not None) == clamped
    if clamped:
        assert typed.strip() in note and f"{expected:g}" in note


@pytest.mark.parametrize("typed, fragment", [("0", "greater than 0"), ("-2", "greater than 0"),
                                             ("nan", "greater than 0"), ("abc", "not a number"),
                                             ("x" * 5000, "not a number")])
def test_read_temperature_refuses_with_a_sentence(typed, fragment):
    with pytest.raises(BadInput, match=fragment) as e:
        lk.read_temperature(typed)
    assert len(str(e.value)) < 300  # a 5,000-character paste is not echoed back whole
