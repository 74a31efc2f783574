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


@pytest.mark.parametrize("layers, every", [(6, 1), (30, 5), (80, None)])
def test_layer_lines_span_the_layers_alone(layers, every):
    """No tick before layer 0 or after the last (plotly pads the axis for its markers, which gives SmolLM2's 30
    layers ticks at -1 and 30); each layer labelled up to 16 of them, every fifth up to 60, plotly's choice beyond."""
    from attnviz.metrics.figures import layer_lines

    fig = layer_lines({"a": np.linspace(0, 1, layers), "b": np.ones(layers - 1)}, title="t", ytitle="y")
    assert tuple(fig.layout.xaxis.range) == (-0.5, layers - 0.5)
    assert fig.layout.xaxis.dtick == every and fig.layout.xaxis.tick0 == 0
    assert [len(t.x) for t in fig.data] == [layers, layers - 1]
