"""Figure helpers of the analytics pages."""
import numpy as np
import pytest


def test_shared_colour_max_short_and_long():
    from attnviz.metrics.figures import shared_colour_max

    a, b = np.zeros((5, 5)), np.zeros((5, 5))
    a[1, 2], b[3, 3] = 0.4, 0.7
    assert shared_colour_max(a, b) == pytest.approx(0.7)  # short: the largest value of either
    assert shared_colour_max(np.zeros((3, 3))) == 1.0  # nothing to scale by
    rng = np.random.default_rng(0)
    long_a, long_b = rng.random((300, 300)) * 0.01, rng.random((300, 300)) * 0.02
    long_b[:, 0] = 1.0  # a sink column
    # long: block-averaged (2 x 2 at 300 tokens) then the larger 99th percentile, not the sink's 1.0
    expected = max(np.quantile(long_a.reshape(150, 2, 150, 2).mean(axis=(1, 3)), 0.99),
                   np.quantile(long_b.reshape(150, 2, 150, 2).mean(axis=(1, 3)), 0.99))
    assert shared_colour_max(long_a, long_b) == pytest.approx(expected, rel=1e-5)
    assert expected < 0.6
