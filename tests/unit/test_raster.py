"""The layers x heads grid: one PNG, thumbnails that keep the pattern, click layer."""
import io

import numpy as np
from PIL import Image

import pytest

from attnviz.heatmap.raster import GridLayout, grid_png, thumbnail, thumbnails
from attnviz.heatmap.figures import grid_figure
from attnviz.plotting import colour_lut


def test_thumbnail_block_mean_keeps_mass():
    m = np.random.default_rng(0).random((128, 128)).astype(np.float32)
    t = thumbnail(m, 32)
    assert t.shape == (32, 32)
    np.testing.assert_allclose(t[0, 0], m[:4, :4].mean(), rtol=1e-5)
    np.testing.assert_allclose(t.mean(), m.mean(), rtol=1e-4)


def test_thumbnail_enlarges_by_repetition():
    t = thumbnail(np.eye(4, dtype=np.float32), 16)
    np.testing.assert_array_equal(t, np.kron(np.eye(4), np.ones((4, 4))))


def test_grid_png_places_each_head():
    n = 8
    att = np.zeros((2, 3, n, n), dtype=np.float32)
    att[1, 2] = np.eye(n)  # only layer 1, head 2 has a diagonal
    att[0, 0, :, 0] = 1.0  # layer 0, head 0 attends to the first token
    layout = GridLayout(2, 3, 16, 2)
    img = np.asarray(Image.open(io.BytesIO(grid_png(att, layout))).convert("RGB"))
    assert img.shape == (layout.height, layout.width, 3)
    lut = colour_lut("Viridis")
    x, y = layout.centre(1, 2)
    top = (int(y - 8), int(x - 8))  # top-left pixel of layer 1 head 2: on the diagonal
    assert tuple(img[top[0], top[1]]) == tuple(lut[255])
    assert tuple(img[top[0], top[1] + 15]) == tuple(lut[0])
    x0, y0 = layout.centre(0, 0)
    assert tuple(img[int(y0), int(x0 - 8)]) == tuple(lut[255])  # first column bright


def test_grid_figure_click_layer_has_every_head():
    layout = GridLayout(2, 3, 16, 2)
    fig = grid_figure(grid_png(np.ones((2, 3, 4, 4), np.float32) / 4, layout), layout)
    scatter = fig.data[1]
    assert [list(c) for c in scatter.customdata] == [[l, h] for l in range(2) for h in range(3)]
    assert fig.data[0].source.startswith("data:image/png;base64,")


def test_grid_frames_are_shapes_around_the_open_and_ablated_heads():
    """The picture does not depend on the open head (so it is cached once per result); the frames
    are rectangles centred on the chosen thumbnails: red for the open head, grey for ablated ones."""
    layout = GridLayout(2, 3, 16, 2)
    att = np.random.default_rng(0).random((2, 3, 5, 5)).astype(np.float32)
    png = grid_png(att, layout)
    assert png == grid_png(att, layout)
    fig = grid_figure(png, layout, selected=(1, 2), ablated={(0, 1)})
    rects = {(s.line.color): ((s.x0 + s.x1) / 2, (s.y0 + s.y1) / 2, s.x1 - s.x0) for s in fig.layout.shapes}
    assert set(rects) == {"rgb(220,30,30)", "rgb(140,140,140)"}
    assert rects["rgb(220,30,30)"] == (*layout.centre(1, 2), 16 + 2)
    assert rects["rgb(140,140,140)"] == (*layout.centre(0, 1), 16 + 2)
    assert grid_figure(png, layout).layout.shapes == ()


@pytest.mark.parametrize("shape, size", [((2, 3, 128, 128), 32),  # a whole-number shrink: block means
                                         ((2, 3, 96, 64), 32),  # cross-attention, both sides shrink
                                         ((2, 3, 4, 4), 16),  # a whole-number enlargement: repeats
                                         ((2, 3, 100, 100), 64),  # any other ratio: head by head
                                         ((1, 2, 48, 16), 32)])  # one side shrinks, the other grows
def test_every_heads_thumbnail_at_once_is_each_heads_thumbnail(shape, size):
    att = np.random.default_rng(1).random(shape).astype(np.float32)
    att.setflags(write=False)  # as a result's arrays are
    got = thumbnails(att, size)
    assert got.shape == (shape[0], shape[1], size, size) and got.dtype == np.float32
    for layer in range(shape[0]):
        for head in range(shape[1]):
            np.testing.assert_allclose(got[layer, head], thumbnail(att[layer, head], size), rtol=2e-6, atol=1e-8)


@pytest.mark.parametrize("scale", ["Viridis", "Magma"])  # Magma's 256 colours and white are 257: no palette
def test_grid_png_pixels_are_each_thumbnail_in_the_scale_on_white(scale):
    layout = GridLayout(2, 3, 16, 2)
    att = np.random.default_rng(2).random((2, 3, 64, 64)).astype(np.float32)
    png = grid_png(att, layout, scale)
    img = Image.open(io.BytesIO(png))
    lut = colour_lut(scale)
    assert img.mode == ("P" if len(np.unique(np.vstack([lut, [[255, 255, 255]]]), axis=0)) <= 256 else "RGB")
    # the picture drawn pixel by pixel: each head's 4 x 4 block means, scaled to its own largest, in the scale's
    # colours, with white between the thumbnails
    want = np.full((layout.height, layout.width, 3), 255, dtype=np.uint8)
    for layer in range(2):
        for head in range(3):
            means = att[layer, head].reshape(16, 4, 16, 4).mean(axis=(1, 3))
            x, y = layout.centre(layer, head)
            top, left = int(y - 8), int(x - 8)
            want[top:top + 16, left:left + 16] = lut[np.round(means / means.max() * 255).astype(int)]
    np.testing.assert_array_equal(np.asarray(img.convert("RGB")), want)


def test_a_long_inputs_grid_csv_holds_the_thumbnails_the_picture_is_drawn_from(monkeypatch):
    import csv

    from attnviz.heatmap import raster

    monkeypatch.setattr(raster, "GRID_CSV_MAX_VALUES", 100)  # 2 x 2 heads of 32 x 32 are "long" here
    att = np.random.default_rng(3).random((2, 2, 32, 32)).astype(np.float32)
    rows = list(csv.reader(io.StringIO(raster.grid_csv(att, [f"t{i}" for i in range(32)], 8))))
    assert rows[0][0].startswith("# 32 tokens: each head's 8 x 8 thumbnail")
    # layer 1, head 0: its header row names the key ranges, then one row per query range of 4 tokens
    at = rows.index(["# layer 1 head 0 (rows: query, columns: key)", "0-3", "4-7", "8-11", "12-15", "16-19", "20-23",
                     "24-27", "28-31"])
    block = np.array([[float(v) for v in row[1:]] for row in rows[at + 1:at + 9]])
    assert [row[0] for row in rows[at + 1:at + 9]][:2] == ["0-3", "4-7"]
    np.testing.assert_allclose(block, att[1, 0].reshape(8, 4, 8, 4).mean(axis=(1, 3)), rtol=1e-6)
