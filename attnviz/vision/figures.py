"""The Vision page's figures: attention drawn over the image (one PNG each, with transparent click markers on the
patches or heads), attention distance against depth, and the similarity of the patches' position embeddings."""
from __future__ import annotations

import base64
import io

import numpy as np
import plotly.graph_objects as go
from PIL import Image

from attnviz.heatmap.raster import GridLayout
from attnviz.plotting import attach_numbers, colour_lut
from attnviz.vision.patches import PatchGrid

DISPLAY_SIDE = 240  # pixels of one drawn overlay (small images are enlarged, large ones reduced)


def _rgb(image: np.ndarray) -> np.ndarray:
    """(C, H, W) float in [0, 1] -> uint8 (H, W, 3)."""
    x = np.clip(np.asarray(image, dtype=np.float32), 0, 1)
    x = np.repeat(x, 3, axis=0) if x.shape[0] == 1 else x[:3]
    return np.round(x.transpose(1, 2, 0) * 255).astype(np.uint8)


def base_rgb(image: np.ndarray, side: int) -> np.ndarray:
    """uint8 (side, side, 3): the image enlarged (nearest pixel) or reduced (box filter) to side x side."""
    h = np.asarray(image).shape[-2]
    return np.asarray(Image.fromarray(_rgb(image)).resize(
        (side, side), Image.Resampling.NEAREST if h <= side else Image.Resampling.BOX))


def grid_thumb(n_heads_total: int) -> int:
    """Side in pixels of each overlay in the grid: smaller for many heads, so the picture stays well under 1 MB."""
    return 96 if n_heads_total <= 32 else 64 if n_heads_total <= 64 else 40


def overlay_rgb(image: np.ndarray, weights: np.ndarray, grid: PatchGrid, side: int = DISPLAY_SIDE,
                colorscale: str = "Inferno", base: np.ndarray | None = None) -> np.ndarray:
    """uint8 (side, side, 3): the image, dimmed, with each patch tinted by its weight (scaled to the largest).
    base: base_rgb(image, side), when already made."""
    base = base_rgb(image, side) if base is None else base
    w = np.asarray(weights, dtype=np.float32).reshape(grid.rows, grid.cols)
    peak = float(w.max())
    w = w / peak if peak > 0 else w
    cell = np.asarray(Image.fromarray(w, mode="F").resize((side, side), Image.Resampling.NEAREST))  # patch blocks
    colour = colour_lut(colorscale)[np.round(np.clip(cell, 0, 1) * 255).astype(np.int64)].astype(np.float32)
    alpha = (0.25 + 0.6 * cell)[..., None]
    out = np.asarray(base, dtype=np.float32) * (1 - alpha) + colour * alpha
    return np.round(out).astype(np.uint8)


def png_uri(rgb: np.ndarray) -> str:
    """A uint8 (H, W, 3) array as a PNG data URI (what go.Image(source=...) sends: bytes, not numbers)."""
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="PNG", compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _weights_csv(weights: np.ndarray, grid: PatchGrid, what: str) -> str:
    rows = [f"# {what}", "patch,row,column,weight"]
    rows += [f"{k},{k // grid.cols},{k % grid.cols},{float(v):.6g}" for k, v in enumerate(np.asarray(weights))]
    return "\n".join(rows) + "\n"


def overlay_figure(image: np.ndarray, weights: np.ndarray, grid: PatchGrid, title: str, *, query: int | None = None,
                   what: str = "weight", height: int = 420) -> go.Figure:
    """One map over the image: a PNG (go.Image) and a transparent marker on every patch centre, so a click on a
    patch reports its index (customdata). query: the patch whose row is drawn, outlined in cyan."""
    side = DISPLAY_SIDE
    fig = go.Figure(go.Image(source=png_uri(overlay_rgb(image, weights, grid, side)), hoverinfo="skip"))
    s = side / grid.width
    centres = grid.centres() * s  # (n, 2) y, x in drawn pixels
    text = [f"patch r{k // grid.cols}c{k % grid.cols}<br>{what} {float(v):.4f}<br>click to look from here"
            for k, v in enumerate(np.asarray(weights))]
    fig.add_trace(go.Scatter(x=centres[:, 1], y=centres[:, 0], mode="markers", customdata=np.arange(grid.n),
                             hovertext=text, hoverinfo="text", showlegend=False,
                             marker=dict(size=max(6, 0.8 * grid.patch * s), symbol="square", opacity=0.01,
                                         color="white")))
    if query is not None:
        r, c = divmod(int(query), grid.cols)
        p = grid.patch * s
        fig.add_shape(type="rect", x0=c * p, x1=(c + 1) * p, y0=r * p, y1=(r + 1) * p,
                      line=dict(color="cyan", width=3), layer="above")
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50, b=10), dragmode=False,
                      xaxis=dict(visible=False, range=[0, side], constrain="domain"),
                      yaxis=dict(visible=False, range=[side, 0], scaleanchor="x", constrain="domain"))
    return attach_numbers(fig, _weights_csv(weights, grid, title))


def grid_figure(image: np.ndarray, rows: np.ndarray, grid: PatchGrid, *, selected: tuple[int, int] | None = None,
                thumb: int | None = None, title: str = "") -> go.Figure:
    """Every layer x head as an overlay, all in ONE PNG, with a transparent marker per thumbnail
    (customdata = [layer, head]) so a click opens that head. rows: (layer, head, n_patches)."""
    rows = np.asarray(rows)
    n_l, n_h = rows.shape[:2]
    thumb = thumb or grid_thumb(n_l * n_h)
    base = base_rgb(image, thumb)
    layout = GridLayout(n_l, n_h, thumb, 6)
    canvas = np.full((layout.height, layout.width, 3), 255, dtype=np.uint8)
    step = thumb + layout.gap
    for l in range(n_l):
        for h in range(n_h):
            y0, x0 = layout.gap + l * step, layout.gap + h * step
            canvas[y0:y0 + thumb, x0:x0 + thumb] = overlay_rgb(image, rows[l, h], grid, thumb, base=base)
    fig = go.Figure(go.Image(source=png_uri(canvas), hoverinfo="skip"))
    xs, ys, custom = [], [], []
    for l in range(n_l):
        for h in range(n_h):
            x, y = layout.centre(l, h)
            xs.append(x)
            ys.append(y)
            custom.append([l, h])
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", customdata=custom, hoverinfo="text", showlegend=False,
                             hovertext=[f"layer {l}, head {h}<br>click to open" for l, h in custom],
                             marker=dict(size=thumb * 0.8, symbol="square", opacity=0.01, color="white")))
    if selected is not None:
        l, h = selected
        x0, y0 = layout.gap + h * step, layout.gap + l * step
        half = layout.gap / 2
        fig.add_shape(type="rect", x0=x0 - half, x1=x0 + thumb + half, y0=y0 - half, y1=y0 + thumb + half,
                      line=dict(color="rgb(220,30,30)", width=layout.gap), layer="above")
    fig.update_layout(
        title=title, height=int(layout.height + 100), margin=dict(l=60, r=10, t=80, b=10), dragmode=False,
        xaxis=dict(range=[0, layout.width], showgrid=False, zeroline=False, side="top",
                   tickvals=[layout.centre(0, h)[0] for h in range(n_h)], ticktext=[f"head {h}" for h in range(n_h)],
                   constrain="domain"),
        yaxis=dict(range=[layout.height, 0], showgrid=False, zeroline=False,
                   tickvals=[layout.centre(l, 0)[1] for l in range(n_l)], ticktext=[f"layer {l}" for l in range(n_l)],
                   scaleanchor="x", constrain="domain"))
    csv = "layer,head," + ",".join(f"r{k // grid.cols}c{k % grid.cols}" for k in range(grid.n)) + "\n"
    csv += "".join(f"{l},{h}," + ",".join(f"{float(v):.6g}" for v in rows[l, h]) + "\n"
                   for l in range(n_l) for h in range(n_h))
    return attach_numbers(fig, csv)


def distance_figure(distance: np.ndarray, patch: int, height: int = 380) -> go.Figure:
    """Mean attention distance (pixels) of every head against its layer, as in the ViT paper's Figure 7.
    distance: (layer, head)."""
    d = np.asarray(distance)
    n_l, n_h = d.shape
    fig = go.Figure()
    step = 0.6 / n_h  # the heads of a layer side by side around its tick, so equal distances do not hide each other
    for h in range(n_h):
        fig.add_trace(go.Scatter(x=np.arange(n_l) + (h - (n_h - 1) / 2) * step, y=d[:, h], mode="markers",
                                 name=f"head {h}", customdata=np.arange(n_l), marker=dict(size=11),
                                 hovertemplate=f"layer %{{customdata}}, head {h}: %{{y:.2f}} px<extra></extra>"))
    fig.update_layout(title="Mean attention distance per head", height=height, margin=dict(l=60, r=10, t=50, b=50),
                      xaxis=dict(title="layer (depth)", tickvals=list(range(n_l)), range=[-0.5, n_l - 0.5],
                                 showgrid=False),
                      yaxis=dict(title=f"mean distance (pixels; a patch is {patch})", rangemode="tozero"))
    csv = "layer,head,mean distance in pixels\n" + "".join(
        f"{l},{h},{float(d[l, h]):.6g}\n" for l in range(n_l) for h in range(n_h))
    return attach_numbers(fig, csv)


def position_figure(similarity: np.ndarray, grid: PatchGrid, height: int = 460) -> go.Figure:
    """Cosine similarity of each patch's position embedding with every other patch's, as tiles laid out like
    the patches (the ViT paper's Figure 7, centre): tile (r, c) shows patch (r, c)'s similarities."""
    s = np.asarray(similarity)
    R, C = grid.rows, grid.cols
    mosaic = np.full((R * (R + 1), C * (C + 1)), np.nan)
    for k in range(grid.n):
        r, c = divmod(k, C)
        mosaic[r * (R + 1):r * (R + 1) + R, c * (C + 1):c * (C + 1) + C] = s[k].reshape(R, C)
    low = float(s.min())  # the colours span the similarities that occur (a 2-D sin/cos start keeps them high)
    fig = go.Figure(go.Heatmap(z=mosaic, zmin=low, zmax=1.0, colorscale="Viridis",
                               colorbar=dict(title="cosine"), hoverongaps=False,
                               hovertemplate="cosine %{z:.3f}<extra></extra>"))
    fig.update_layout(title="Similarity of the position embeddings", height=height,
                      margin=dict(l=60, r=10, t=50, b=40),
                      xaxis=dict(title="input patch column", showticklabels=False, constrain="domain"),
                      yaxis=dict(title="input patch row", showticklabels=False, autorange="reversed",
                                 scaleanchor="x", constrain="domain"))
    labels = [f"r{k // C}c{k % C}" for k in range(grid.n)]
    csv = "patch," + ",".join(labels) + "\n" + "".join(
        labels[i] + "," + ",".join(f"{float(v):.6g}" for v in s[i]) + "\n" for i in range(grid.n))
    return attach_numbers(fig, csv)
