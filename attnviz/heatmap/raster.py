"""All layers x heads drawn as ONE raster image (a PNG), with an invisible click layer."""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from PIL import Image
from attnviz.plotting import colour_lut, csv_number, csv_values
from attnviz.units import count_text


def thumbnail(matrix: np.ndarray, size: int) -> np.ndarray:
    """(size, size) float32 resampling of a (query, key) matrix: block mean when shrinking
    (no pattern is lost between sampled pixels), nearest pixel when enlarging."""
    m = np.asarray(matrix, dtype=np.float32)
    img = Image.fromarray(m, mode="F")
    method = Image.Resampling.BOX if max(m.shape) >= size else Image.Resampling.NEAREST
    return np.asarray(img.resize((size, size), method), dtype=np.float32)


def thumbnails(attention: np.ndarray, size: int) -> np.ndarray:
    """(layer, head, size, size) float32: thumbnail() of every head of `attention` (layer, head, query, key) at once.
    A whole-number shrink is a block mean (torch's average pooling, on every core; the same means as the box filter
    to float32 rounding), a whole-number enlargement repeats each value (as the nearest pixel does); any other ratio
    goes head by head through thumbnail()."""
    n_layers, n_heads, n_q, n_k = attention.shape
    if max(n_q, n_k) >= size and n_q % size == 0 and n_k % size == 0:
        import warnings

        import torch

        with warnings.catch_warnings():  # a result's arrays are read-only; pooling only reads them
            warnings.simplefilter("ignore", UserWarning)
            x = torch.from_numpy(np.ascontiguousarray(attention, dtype=np.float32))
        pooled = torch.nn.functional.avg_pool2d(x.reshape(n_layers * n_heads, 1, n_q, n_k), (n_q // size, n_k // size))
        return pooled.reshape(n_layers, n_heads, size, size).numpy()
    if max(n_q, n_k) < size and size % n_q == 0 and size % n_k == 0:
        return np.asarray(attention, dtype=np.float32).repeat(size // n_q, axis=2).repeat(size // n_k, axis=3)
    return np.stack([np.stack([thumbnail(attention[layer, head], size) for head in range(n_heads)])
                     for layer in range(n_layers)])


def _png(indices: np.ndarray, colours: np.ndarray) -> bytes:
    """PNG bytes of a picture given as indices (height, width) into `colours` (n, 3) uint8: with a palette (one byte
    a pixel) when the colours are at most 256 different ones, else as RGB; the same pixels either way. zlib level 1:
    on MiniLM's 512-token grid the palette picture is 190 kB in 6 ms, against 390 kB in 23 ms as RGB (and 344 kB in
    66 ms as RGB at level 6); a new text waits for this picture."""
    palette, position = np.unique(colours, axis=0, return_inverse=True)
    buf = io.BytesIO()
    if len(palette) <= 256:
        img = Image.frombytes("P", (indices.shape[1], indices.shape[0]),
                              position.reshape(-1).astype(np.uint8)[indices].tobytes())
        img.putpalette(palette.reshape(-1).tolist())
    else:
        img = Image.fromarray(colours[indices])
    img.save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


@dataclass(frozen=True)
class GridLayout:
    n_layers: int
    n_heads: int
    thumb: int  # thumbnail side in pixels
    gap: int  # pixels between thumbnails

    @property
    def width(self) -> int:
        return self.n_heads * (self.thumb + self.gap) + self.gap

    @property
    def height(self) -> int:
        return self.n_layers * (self.thumb + self.gap) + self.gap

    def centre(self, layer: int, head: int) -> tuple[float, float]:
        step = self.thumb + self.gap
        return self.gap + head * step + self.thumb / 2, self.gap + layer * step + self.thumb / 2


def default_thumb(n_layers: int, n_heads: int, seq_len: int) -> int:
    """Thumbnail side: about 64 px, smaller for many heads, never above the sequence length x 4."""
    side = 64 if n_layers * n_heads <= 96 else 40
    return int(max(16, min(side, seq_len * 4)))


def grid_png(attention: np.ndarray, layout: GridLayout, colorscale: str = "Viridis") -> bytes:
    """PNG bytes of every head's thumbnail; each thumbnail is scaled to its own maximum so
    that weak heads still show their pattern. attention: (layer, head, query, key).
    The open and the ablated heads' frames are drawn by grid_figure, so one picture of a result
    serves every head choice (the page caches it)."""
    lut = colour_lut(colorscale)
    t, gap = layout.thumb, layout.gap
    thumbs = thumbnails(attention[:layout.n_layers, :layout.n_heads], t)  # (layer, head, t, t)
    peaks = thumbs.max(axis=(2, 3), keepdims=True)
    idx = np.where(peaks > 0, np.round(thumbs / np.where(peaks > 0, peaks, 1) * 255), 0).astype(np.uint16)
    # the colours: the scale's 256, then white for the gaps
    colours, white = np.vstack([lut, np.full((1, 3), 255, dtype=np.uint8)]), len(lut)
    # every thumbnail with its gap on the right and below, laid out in one pass, then the gap on the left and top
    cells = np.full((layout.n_layers, t + gap, layout.n_heads, t + gap), white, dtype=np.uint16)
    cells[:, :t, :, :t] = idx.transpose(0, 2, 1, 3)
    canvas = np.full((layout.height, layout.width), white, dtype=np.uint16)
    canvas[gap:, gap:] = cells.reshape(layout.n_layers * (t + gap), layout.n_heads * (t + gap))
    return _png(canvas, colours)


# Above this many numbers (layers x heads x query x key) the grid's CSV holds each head's
# thumbnail (block means over token ranges, what the picture shows) instead of every weight.
GRID_CSV_MAX_VALUES = 4_000_000


def grid_csv(attention: np.ndarray, tokens, thumb: int, key_tokens=None) -> str:
    """The numbers behind the grid as CSV: for every layer and head a block with a header row of
    key labels ("position:token") and one row per query. attention: (layer, head, query, key).
    Very long inputs give each head's thumbnail instead (labels are position ranges)."""
    import csv

    a = np.asarray(attention)
    n_layers, n_heads, n_q, n_k = a.shape
    out = io.StringIO()
    w = csv.writer(out)
    full = a.size <= GRID_CSV_MAX_VALUES
    if full:
        q_labels = [f"{i}:{tokens[i]}" for i in range(n_q)]
        k_labels = [f"{j}:{(tokens if key_tokens is None else key_tokens)[j]}" for j in range(n_k)]
    else:
        w.writerow([f"# {count_text(n_q)} tokens: each head's {thumb} x {thumb} thumbnail (block means over token "
                    "ranges, as drawn); every weight is in the heatmap's CSV and the page's .npz download"])

        def ranges(n):
            edges = np.linspace(0, n, thumb + 1)
            return [f"{int(np.floor(lo))}-{max(int(np.ceil(hi)) - 1, int(np.floor(lo)))}"
                    for lo, hi in zip(edges[:-1], edges[1:])]
        q_labels, k_labels = ranges(n_q), ranges(n_k)
    thumbs = None if full else thumbnails(a, thumb)  # the picture's own block means
    for layer in range(n_layers):
        for head in range(n_heads):
            m = a[layer, head] if full else thumbs[layer, head]
            w.writerow([f"# layer {layer} head {head} (rows: query, columns: key)"] + k_labels)
            for label, row in zip(q_labels, csv_values(m)):
                w.writerow([label] + [csv_number(v) for v in row])
    return out.getvalue()
