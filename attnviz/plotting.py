"""Shared plotting helpers: palettes, token ticks, number formats, log colour scales, exact numbers
kept on a figure for its CSV (the features' figures.py modules build the figures)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale, sample_colorscale, unlabel_rgb

# Palettes offered to the user; the first two are perceptually uniform and colour-blind safe.
PALETTES = {
    "Viridis (colour-blind safe)": "Viridis",
    "Cividis (colour-blind safe)": "Cividis",
    "Blues": "Blues",
    "Magma": "Magma",
}
# Hover names the tokens at every length: the axes are categories "position: token" (n labels per
# axis, not per cell), so a 512-token map carries 2 x 512 strings, not 512^2 customdata pairs.
HOVER_TOKENS_MAX = 160  # kept for callers; no longer limits hover
# Weights are shown with this d3 format: 4 significant digits, scientific for small weights
# (1.234e-05, never "0.0000" and never SI prefixes such as "12.3µ").
WEIGHT_FORMAT = ".4~g"
# Ticks of weight axes and colour bars: plain or scientific notation, never SI prefixes ("100µ").
NO_SI = dict(exponentformat="e")
# The Python attribute on a figure holding its exact numbers for the CSV export (never sent to
# the browser): a callable returning CSV text, see attnviz.export.figure_csv.
NUMBERS_ATTR = "_attnviz_numbers"
# Above this many tokens the axis shows every k-th label.
TICKS_MAX = 80


def token_ticks(tokens, positions=None) -> dict:
    """tickvals/ticktext for integer axis positions (repeated tokens stay separate rows)."""
    idx = np.arange(len(tokens)) if positions is None else np.asarray(positions)
    step = max(1, int(np.ceil(len(idx) / TICKS_MAX)))
    keep = np.arange(0, len(idx), step)
    return dict(tickmode="array", tickvals=keep.tolist(), ticktext=[str(tokens[idx[i]]) for i in keep])


def built(traces, **layout) -> go.Figure:
    """go.Figure(traces) with its layout given at construction: the same JSON as fig.update_layout(**layout)
    on the built figure, which goes through plotly's batched relayout and takes two to three times as long."""
    return go.Figure(traces, layout=go.Layout(**layout))


def no_si_prefixes(fig: go.Figure) -> go.Figure:
    """Every axis and colour bar of `fig` formats numbers without SI prefixes (plotly's default
    writes 0.0001 as "100µ"). Returns fig (changed in place)."""
    # each axis set directly: fig.update_xaxes goes through plotly's batch relayout, several times slower
    for axis in (*fig.select_xaxes(), *fig.select_yaxes()):
        for k, v in NO_SI.items():
            if getattr(axis, k) != v:  # a builder that set it already saves plotly's relayout
                setattr(axis, k, v)
    for trace in fig.data:
        if "colorbar" in trace:
            trace.colorbar.exponentformat = NO_SI["exponentformat"]
        marker = getattr(trace, "marker", None)
        # only a marker that shows its scale: a colorbar spec on any other marker makes
        # Streamlit's plotly draw a stray colour bar
        if marker is not None and "colorbar" in marker and marker.showscale:
            marker.colorbar.exponentformat = NO_SI["exponentformat"]
    if _uses_coloraxis(fig):  # touching an unused colour axis would draw an extra colour bar
        fig.update_coloraxes(colorbar_exponentformat=NO_SI["exponentformat"])
    return fig


def _uses_coloraxis(fig: go.Figure) -> bool:
    return any(getattr(t, "coloraxis", None) or getattr(getattr(t, "marker", None), "coloraxis", None)
               for t in fig.data)


def csv_number(v) -> str:
    """A number as CSV text at full precision: the shortest text that reads back to the same value in
    its own type (a float32 weight 0.1 is "0.1", never "0.10000000149011612" nor a rounded "0.1000")."""
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return str(v)  # numpy writes the shortest round-trip text of the scalar's own dtype
    if isinstance(v, float):
        return repr(v)
    return str(v)


def csv_values(values) -> np.ndarray:
    """`values` as an array for csv_number: floating arrays keep their dtype (float32 stays float32),
    anything else becomes float64."""
    a = np.asarray(values)
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def matrix_csv(values, row_labels, col_labels, title: str = "", *, rows: str = "query",
               columns: str = "key") -> str:
    """CSV of a labelled matrix at full precision: a header row naming the figure and both axes
    ("# title (rows: query, columns: key)") and the column labels, then one row per row label."""
    import csv
    import io

    out = io.StringIO()
    w = csv.writer(out)
    axes = f"rows: {rows}, columns: {columns}"
    w.writerow([f"# {title} ({axes})" if title else f"# {axes}"] + list(col_labels))
    for label, row in zip(row_labels, csv_values(values)):
        w.writerow([label] + [csv_number(v) for v in row])
    return out.getvalue()


def attach_numbers(fig: go.Figure, csv_text) -> go.Figure:
    """Keep a callable returning the figure's exact numbers as CSV on the figure (server side only)."""
    setattr(fig, NUMBERS_ATTR, csv_text)
    return fig


def copy_figure(fig: go.Figure, spec: dict | None = None) -> go.Figure:
    """A copy of `fig` that may be changed without touching `fig` (its CSV numbers kept). spec: the copy's JSON
    instead (fig.to_dict() as the caller changed it), wrapped without plotly's validation."""
    copy = go.Figure(fig) if spec is None else go.Figure(spec, _validate=False)
    if hasattr(fig, NUMBERS_ATTR):
        setattr(copy, NUMBERS_ATTR, getattr(fig, NUMBERS_ATTR))
    return copy


def log_ticks(floor: float, top: float) -> tuple[list[float], list[str]]:
    """Tick weights for a log colour bar: powers of ten (and 1-2-5 steps within a short range)
    between floor and top, with their labels in plain or scientific notation."""
    lo, hi = np.floor(np.log10(floor)), np.ceil(np.log10(top))
    mults = (1, 2, 5) if hi - lo <= 3 else (1,)
    ticks = [m * 10.0 ** e for e in np.arange(lo, hi + 1) for m in mults]
    ticks = [t for t in ticks if floor * (1 - 1e-9) <= t <= top * (1 + 1e-9)]
    if len(ticks) < 2:
        ticks = [floor, top]
    return ticks, [f"{t:.3g}" if t >= 1e-3 else f"{t:.0e}".replace("e-0", "e-") for t in ticks]


def log_colorbar_trace(colorscale, floor: float, top: float, title: str) -> go.Scatter:
    """An invisible trace whose colour bar runs over log10(weight) from floor to top, labelled in
    the real weights at log positions (the heatmap keeps exact weights as z)."""
    vals, text = log_ticks(floor, top)
    lo, hi = float(np.log10(floor)), float(np.log10(top))
    return go.Scatter(x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
                      name="log colour bar",
                      marker=dict(color=[lo], cmin=lo, cmax=hi, colorscale=colorscale, showscale=True,
                                  colorbar=dict(title=title, tickmode="array",
                                                tickvals=[float(np.log10(v)) for v in vals],
                                                ticktext=text, **NO_SI)))


def log_colorscale(colorscale, floor: float, top: float, n_stops: int = 33) -> list:
    """A colour scale over [0, top] whose colours follow log10(weight) from `floor` to `top`
    (weights below the floor share the first colour), so exact weights can stay the z values."""
    from plotly.colors import get_colorscale, sample_colorscale

    weights = np.geomspace(floor, top, n_stops)
    colours = sample_colorscale(get_colorscale(colorscale), np.linspace(0, 1, n_stops))
    stops = [[0.0, colours[0]]] + [[float(w / top), c] for w, c in zip(weights, colours)]
    stops[-1][0] = 1.0
    return stops


def relative_luminance(rgb) -> float:
    """WCAG 2 relative luminance of an (r, g, b) colour with channels 0-255: 0 = black, 1 = white."""
    c = np.asarray(rgb, dtype=np.float64)[:3] / 255.0
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(lin @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(a, b) -> float:
    """WCAG 2 contrast ratio of two (r, g, b) colours, from 1 (the same) to 21 (black on white); body text
    needs at least 4.5."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def readable_ink(background) -> str:
    """Black or white, whichever contrasts more with `background` (r, g, b): at least 4.58:1 on any colour."""
    return "#000000" if contrast_ratio(background, (0, 0, 0)) >= contrast_ratio(background, (255, 255, 255)) \
        else "#ffffff"


def cell_colours(values: np.ndarray, colorscale, zmin=None, zmax=None, zmid=None) -> np.ndarray:
    """float (..., 3) rgb 0-255 colour plotly gives each value of a heatmap with this colour scale and
    range (zmin/zmax from the finite values when None, centred on zmid when given); NaN where a value is
    not finite (no cell drawn)."""
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    lo = zmin if zmin is not None else (float(v[finite].min()) if finite.any() else 0.0)
    hi = zmax if zmax is not None else (float(v[finite].max()) if finite.any() else 1.0)
    if zmid is not None and zmin is None and zmax is None:
        half = max(abs(hi - zmid), abs(lo - zmid))
        lo, hi = zmid - half, zmid + half
    if hi <= lo:  # plotly widens a flat range by 0.5 each way: every cell takes the middle colour
        lo, hi = lo - 0.5, hi + 0.5
    t = np.clip((np.where(finite, v, lo) - lo) / (hi - lo), 0.0, 1.0)
    scale = colorscale if isinstance(colorscale, (list, tuple)) else get_colorscale(colorscale)
    rgb = np.array([unlabel_rgb(c) for c in sample_colorscale(scale, t.ravel().tolist(), colortype="rgb")],
                   dtype=np.float64).reshape(v.shape + (3,))
    rgb[~finite] = np.nan
    return rgb


@lru_cache(maxsize=16)
def colour_lut(colorscale: str = "Viridis", n: int = 256) -> np.ndarray:
    """(n, 3) uint8 colours sampled from a plotly colour scale (same colours as the heatmaps), read-only: made
    once per scale, as plotly's sampling takes about 15 ms."""
    samples = sample_colorscale(get_colorscale(colorscale), np.linspace(0, 1, n), colortype="rgb")
    lut = np.array([unlabel_rgb(s) for s in samples], dtype=np.float64).round().clip(0, 255).astype(np.uint8)
    lut.setflags(write=False)
    return lut


# A figure as bytes: a trace's z with more values than this (a 64 x 64 map) goes as float32 after the JSON
BYTES_ABOVE = 4096
BYTES_FIELDS = ("z",)


def large_arrays(fig: go.Figure) -> list[tuple[int, str]]:
    """(trace index, field) of the numeric arrays of `fig` large enough to travel as bytes (figure_bytes)."""
    return [(i, f) for i, t in enumerate(fig.data) for f in BYTES_FIELDS
            if isinstance(getattr(t, f, None), np.ndarray) and getattr(t, f).size > BYTES_ABOVE
            and getattr(t, f).dtype.kind in "fiu"]


def merged(base: dict, over: dict) -> dict:
    """`base` with `over` written into it, nested dicts merged (over wins)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merged(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


PICTURE_PREFIX = "data:image/png;base64,"
LINK_ABOVE = 16_384  # characters of an embedded picture above which figure_bytes can send a link instead


def pictures_as_links(d: dict, link) -> list[int]:
    """In a figure's JSON `d` (to_plotly_json), each image trace whose source is a data-URI PNG longer than
    LINK_ABOVE characters replaced, in place, by a layout image over the same area whose source is link(trace
    index, png bytes) (plotly's image trace takes data URIs only; a layout image takes a link): a figure redrawn
    around the same picture then names it instead of carrying it. Returns the indices of the traces removed."""
    import base64

    kept, removed = [], []
    for i, t in enumerate(d.get("data", [])):
        src = t.get("source")
        if t.get("type") != "image" or not isinstance(src, str) or not src.startswith(PICTURE_PREFIX) \
                or len(src) <= LINK_ABOVE:
            kept.append(t)
            continue
        removed.append(i)
        png = base64.b64decode(src[len(PICTURE_PREFIX):])
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")  # the IHDR chunk
        dx, dy = t.get("dx") or 1, t.get("dy") or 1
        d.setdefault("layout", {}).setdefault("images", []).append(dict(
            source=link(i, png), xref=t.get("xaxis") or "x", yref=t.get("yaxis") or "y",
            x=(t.get("x0") or 0) - dx / 2, y=(t.get("y0") or 0) - dy / 2, sizex=width * dx, sizey=height * dy,
            xanchor="left", yanchor="top", sizing="stretch", layer="below"))
    d["data"] = kept
    return removed


def _colour_range(trace: dict, z: np.ndarray) -> None:
    """A heatmap trace (JSON) that plotly.js colours over its data's span given that span as zmin and zmax: its
    least and greatest finite values, which plotly.js would find itself by visiting each value through its number
    checks (a quarter of drawing a new 512 x 512 map). plotly.js spans the data when zauto is true, or is not given
    and zmin and zmax do not give a range (a zmin alone is then ignored), unless a midpoint (zmid) or a colour axis
    sets it. The same colours and colour bar; left as it is when the values are all equal or none is finite
    (plotly.js widens such a span itself)."""
    if trace.get("type") != "heatmap" or trace.get("coloraxis") or trace.get("zmid") is not None:
        return
    low, high, auto = trace.get("zmin"), trace.get("zmax"), trace.get("zauto")
    if auto is None:
        auto = not (_number(low) and _number(high) and low < high)
    if not auto:
        return
    finite = z[np.isfinite(z)]
    if finite.size and finite.min() < finite.max():
        trace.update(zmin=float(finite.min()), zmax=float(finite.max()), zauto=False)


def _number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) and bool(np.isfinite(x))


def figure_bytes(fig: go.Figure, extra: dict, *, layout: dict | None = None, colorbar: dict | None = None,
                 link=None) -> bytes:
    """`fig` as one message: a little-endian uint32 length n, n bytes of JSON {figure: the figure without its large
    arrays (None in their place), arrays: [{trace, field, shape}], digest, **extra}, zero padding to a multiple
    of 4, then each large array (large_arrays) as little-endian float32, in that order. layout: a base the
    figure's own layout is written over (its template dropped); colorbar: the same for each heatmap's colour bar;
    link: large pictures go as links (pictures_as_links). A heatmap coloured over its data's span is sent with
    that span (_colour_range). The digest names the message's content (equal figures, equal digests)."""
    import hashlib
    import json
    import struct

    from plotly.utils import PlotlyJSONEncoder

    big = large_arrays(fig)
    d = fig.to_plotly_json()
    arrays, blobs = [], []
    for i, field in big:
        a = np.ascontiguousarray(getattr(fig.data[i], field), dtype="<f4")
        arrays.append({"trace": i, "field": field, "shape": list(a.shape)})
        blobs.append(a.tobytes())
        d["data"][i][field] = None
        if field == "z":
            _colour_range(d["data"][i], a)
    if colorbar is not None:
        for t in d["data"]:
            if t.get("type") == "heatmap" and t.get("showscale", True) is not False:
                t["colorbar"] = merged(colorbar, t.get("colorbar") or {})
    if link is not None:
        removed = pictures_as_links(d, link)
        for a in arrays:  # pictures left the traces before it: an array's trace index follows
            a["trace"] -= sum(r < a["trace"] for r in removed)
    if layout is not None:
        d["layout"] = merged(layout, {k: v for k, v in d.get("layout", {}).items() if k != "template"})
    body = b"".join(blobs)
    text = json.dumps({"figure": d, "arrays": arrays, **extra}, cls=PlotlyJSONEncoder)
    digest = hashlib.blake2b(text.encode() + body, digest_size=12).hexdigest()
    head = (text[:-1] + f', "digest": "{digest}"}}').encode()  # the object serialised once, its digest added last
    return struct.pack("<I", len(head)) + head + b"\0" * ((4 - len(head) % 4) % 4) + body


def figure_from_bytes(data: bytes) -> dict:
    """The JSON of a figure_bytes message, its large arrays back in the figure as numpy float32 (read-only views)."""
    import json
    import struct

    n = struct.unpack("<I", data[:4])[0]
    spec = json.loads(data[4:4 + n])
    at = 4 + n + (4 - n % 4) % 4
    for a in spec["arrays"]:
        size = int(np.prod(a["shape"]))
        spec["figure"]["data"][a["trace"]][a["field"]] = np.frombuffer(data, "<f4", size, at).reshape(a["shape"])
        at += 4 * size
    return spec


@lru_cache(maxsize=1)
def plotly_js() -> bytes:
    """plotly.js as the installed plotly package ships it (minified), for a page to load from the app itself."""
    from pathlib import Path

    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


# The time a kept copy of plotly.js says it was last changed (2000-01-01): a browser keeps a file without a stated
# lifetime for a tenth of its age (RFC 9111, 4.2.2), and the file under its name, which carries its own digest,
# never changes.
PLOTLY_COPY_MTIME = 946684800


def plotly_js_copy(folder) -> str | None:
    """plotly_js() kept as a file in `folder` under a name that carries its digest (plotly-<12 hex>.min.js), written
    (atomically, with PLOTLY_COPY_MTIME as its time) unless a file there already holds it; the file's name, or None
    where it cannot be written."""
    import hashlib
    import os
    from pathlib import Path

    from attnviz.runtime import write_atomically

    js = plotly_js()
    name = f"plotly-{hashlib.sha256(js).hexdigest()[:12]}.min.js"
    path = Path(folder) / name
    try:
        if not (path.is_file() and path.stat().st_size == len(js) and path.read_bytes() == js):
            # readable by anyone who may load the app's pages (a temporary file is private)
            write_atomically(path, js, mode=0o644, mtime=PLOTLY_COPY_MTIME)
        elif path.stat().st_mtime != PLOTLY_COPY_MTIME:
            os.utime(path, (PLOTLY_COPY_MTIME, PLOTLY_COPY_MTIME))
    except OSError:
        return None
    return name
