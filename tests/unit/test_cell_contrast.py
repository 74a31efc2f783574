"""Readable numbers on coloured cells: WCAG contrast against hand values, black or white ink on any colour, and
the lab matrices' cell texts against the colours plotly gives their cells."""
import numpy as np
import pytest

from attnviz.lab.figures import matrix_heatmap
from attnviz.plotting import cell_colours, contrast_ratio, readable_ink, relative_luminance


def test_contrast_ratio_matches_the_wcag_definition():
    assert contrast_ratio((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast_ratio((255, 255, 255), (255, 255, 255)) == pytest.approx(1.0)
    # plotly's automatic dark grey #444 on the Greys scale's middle grey rgb(150, 150, 150): hand-computed
    grey = ((150 / 255 + 0.055) / 1.055) ** 2.4
    dark = ((68 / 255 + 0.055) / 1.055) ** 2.4
    assert relative_luminance((150, 150, 150)) == pytest.approx(grey)
    assert contrast_ratio((68, 68, 68), (150, 150, 150)) == pytest.approx((grey + 0.05) / (dark + 0.05))
    assert contrast_ratio((68, 68, 68), (150, 150, 150)) < 4.5  # why the lab's numbers were hard to read


def test_black_or_white_ink_reads_on_every_colour():
    rng = np.random.default_rng(0)
    colours = np.concatenate([np.repeat(np.arange(256)[:, None], 3, axis=1), rng.integers(0, 256, (2000, 3))])
    for c in colours:
        ink = (0, 0, 0) if readable_ink(c) == "#000000" else (255, 255, 255)
        assert contrast_ratio(ink, c) >= 4.5, c


@pytest.mark.parametrize("m,scale,kw", [
    (np.array([[1, 1, 2], [1, 1, 0], [2, 0, 1]], float), "Greys", {}),  # lab 1's scores
    (np.array([[0.2, 0.2, 0.6], [0.4, 0.4, 0.2], [0.7, 0.1, 0.2]]), "Blues", {"zmin": 0, "zmax": 1}),
    (np.array([[-3.0, 0.5], [1.0, 2.0]]), "RdBu", {"zmid": 0.0}),
    (np.array([[0.0, -np.inf], [0.3, 0.7]]), "Greens", {}),
])
def test_lab_matrix_numbers_contrast_with_their_cells(m, scale, kw):
    fig = matrix_heatmap(m, colorscale=scale, **kw)
    heat, layer = fig.data[0], fig.data[1]
    assert heat.texttemplate is None and layer.mode == "text"
    cells = cell_colours(np.where(np.isfinite(m), m, np.nan), scale, kw.get("zmin"), kw.get("zmax"), kw.get("zmid"))
    for (i, j), ink in zip(np.ndindex(m.shape), layer.textfont.color):
        background = cells[i, j] if np.isfinite(m[i, j]) else (243, 243, 243)  # a masked cell shows the plot
        rgb = (0, 0, 0) if ink == "#000000" else (255, 255, 255)
        assert contrast_ratio(rgb, background) >= 4.5, (i, j, ink, background)
    assert list(layer.text) == [t for row in heat.text for t in row]


def test_cell_colours_follow_plotlys_range_rules():
    from plotly.colors import get_colorscale, sample_colorscale, unlabel_rgb

    greys = get_colorscale("Greys")
    m = np.array([[0.0, 1.0, 2.0]])
    got = cell_colours(m, "Greys")
    ends = [unlabel_rgb(c) for c in sample_colorscale(greys, [0.0, 0.5, 1.0], colortype="rgb")]
    np.testing.assert_allclose(got[0], ends)
    np.testing.assert_allclose(cell_colours(np.full((1, 2), 3.0), "Greys")[0, 0], ends[1])  # flat: the middle
    np.testing.assert_allclose(cell_colours(np.array([[-1.0, 3.0]]), "Greys", zmid=0.0)[0, 0],  # centred on zmid
                               unlabel_rgb(sample_colorscale(greys, [1 / 3], colortype="rgb")[0]))
