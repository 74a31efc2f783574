"""Exports: figures as CSV numbers, standalone offline HTML, SVG/PNG; results as .npz."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil

import numpy as np

from attnviz.errors import AttnvizError
from attnviz.plotting import NUMBERS_ATTR, csv_number, csv_values

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _labels(axis: dict, n: int) -> list[str]:
    """Tick text per integer position when the axis maps positions to tokens."""
    vals, text = axis.get("tickvals"), axis.get("ticktext")
    out = [str(i) for i in range(n)]
    if vals is not None and text is not None:
        for v, t in zip(vals, text):
            if isinstance(v, (int, float)) and 0 <= int(v) < n:
                out[int(v)] = f"{int(v)}:{t}"
    return out


def _axis_title(layout: dict, name: str, default: str) -> str:
    """The plain text of an axis title ("layer", "key (attended to)"), or `default` without one."""
    title = (layout.get(name) or {}).get("title") or {}
    text = title.get("text") if isinstance(title, dict) else title
    return re.sub(r"<[^>]+>", " ", str(text)).strip() if text else default


def _invisible(trace) -> bool:
    """True for a trace whose markers are fully transparent (a layer that only catches clicks)."""
    marker = getattr(trace, "marker", None)
    if marker is None or getattr(trace, "mode", None) not in (None, "markers"):
        return False
    colour = marker.color if isinstance(marker.color, str) else ""
    return marker.opacity == 0 or bool(re.fullmatch(r"rgba\(.*,\s*0(\.0*)?\)", colour.replace(" ", "")))


def figure_title(fig) -> str:
    """A figure's title as plain text: HTML tags out, a <br> note kept after " · " ("" without a title)."""
    layout = fig.layout
    text = layout.title.text if layout.title and layout.title.text else ""
    text = re.sub(r"<br\s*/?>", " · ", str(text))
    return " ".join(re.sub(r"<[^>]+>", "", text).split())


def figure_csv(fig) -> str:
    """The numbers behind a plotly figure as CSV, at full precision (attnviz.plotting.csv_number).

    A figure built with its exact numbers attached (attnviz.plotting.attach_numbers: heatmaps of
    attention, rollout, the grid of every head) exports those, with token labels. Otherwise heatmaps:
    one block per trace, a header row naming the figure and its axes ("# title (rows: layer, columns:
    head)") and the column labels, then one row per y label; scatter/bar traces: columns trace and
    the two axis titles. Images and invisible helper traces are skipped."""
    numbers = getattr(fig, NUMBERS_ATTR, None)
    if numbers is not None:
        return numbers() if callable(numbers) else str(numbers)
    out = io.StringIO()
    w = csv.writer(out)
    layout = fig.layout.to_plotly_json() if hasattr(fig, "layout") else {}
    title = figure_title(fig) if hasattr(fig, "layout") else ""
    x_name, y_name = _axis_title(layout, "xaxis", "x"), _axis_title(layout, "yaxis", "y")
    header = None
    for i, trace in enumerate(fig.data):
        kind = trace.type
        name = trace.name or f"trace {i}"
        if kind == "heatmap" and trace.z is not None:
            z = csv_values(trace.z)
            if z.ndim == 1:
                z = z[None, :]
            cols = _labels(layout.get("xaxis", {}), z.shape[1]) if trace.x is None or np.issubdtype(
                np.asarray(trace.x).dtype, np.number) else [str(x) for x in trace.x]
            rows = _labels(layout.get("yaxis", {}), z.shape[0]) if trace.y is None or np.issubdtype(
                np.asarray(trace.y).dtype, np.number) else [str(y) for y in trace.y]
            w.writerow([f"# {trace.name or title or name} (rows: {y_name}, columns: {x_name})"] + cols)
            for label, row in zip(rows, z):
                w.writerow([label] + [csv_number(v) for v in row])
            header = None
        elif kind in ("scatter", "bar", "scattergl") and trace.y is not None and trace.x is not None:
            if trace.hoverinfo == "skip" and all(x is None for x in trace.x):
                continue  # a colour-bar carrier with no data
            if getattr(trace, "mode", None) == "text" or _invisible(trace):
                continue  # labels drawn over cells, or the transparent markers that catch clicks
            if header is None:
                header = ["trace", x_name, y_name]
                w.writerow(header)
            for x, y in zip(trace.x, trace.y):
                if x is None or y is None:
                    continue
                w.writerow([name, csv_number(x), csv_number(y)])
    return out.getvalue()


def _text_width(text, size: float) -> float:
    """Approximate rendered width in px of a tick label (Arial-like: ~0.62 em per character)."""
    plain = re.sub(r"<[^>]+>", "", str(text))
    return len(plain) * 0.62 * size


def _axis_labels(axis) -> list[str]:
    if axis.ticktext is not None:
        return [str(t) for t in axis.ticktext]
    if axis.tickvals is not None:
        return [str(t) for t in axis.tickvals]
    return ["0.0000"]  # automatic numeric ticks: about six characters


# Streamlit's plotly template holds placeholder colours (#000001 ...) that its web page swaps for the theme's
# colours; a figure rendered on the server (kaleido) would draw every line near-black. These are the light
# theme's defaults (streamlit/config.py: chartCategoricalColors, chartSequentialColors, chartDivergingColors).
_THEME_COLOURS = dict(zip(
    [f"#{i:06d}" for i in range(1, 31)],
    ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a", "#6d3fc0", "#d5dae5",
     "#e4f5ff", "#c7ebff", "#a6dcff", "#83c9ff", "#60b4ff", "#3d9df3", "#1c83e1", "#0068c9", "#0054a3", "#004280",
     "#7d353b", "#bd4043", "#ff4b4b", "#ff8c8c", "#ffc7c7", "#a6dcff", "#60b4ff", "#1c83e1", "#0054a3", "#004280"]))
_THEME_TEXT = "#31333f"  # the remaining placeholders (texts, lines of tables and waterfalls): the theme's ink


def _theme_template(template):
    """`template` with Streamlit's placeholder colours replaced by the light theme's colours (unchanged when it
    has none)."""
    import json

    text = json.dumps(template.to_plotly_json())
    if "#000001" not in text:
        return template
    text = re.sub(r"#0000[0-9]{2}\b", lambda m: _THEME_COLOURS.get(m.group(0), _THEME_TEXT), text)
    return json.loads(text)


def export_ready(fig):
    """A copy of `fig` laid out for server-side export (kaleido) and standalone HTML.

    The browser's Streamlit theme grows margins to fit long tick labels; a figure exported on the
    server gets no such help (Streamlit's default plotly template leaves automargin off), so long
    y labels are cut and x labels vanish. Here every axis gets automargin and the margins are set
    from the label lengths, tick angles and title sizes; tick values and texts are kept as they are.
    Streamlit's placeholder colours become its light theme's colours."""
    import plotly.graph_objects as go

    out = go.Figure(fig)
    layout = out.layout
    if layout.template is not None:
        layout.template = _theme_template(layout.template)  # the colours the page shows, not placeholders
    base = (layout.font.size if layout.font and layout.font.size else None) or 12
    need = {"l": 0.0, "r": 0.0, "t": 0.0, "b": 0.0}
    for name in [k for k in layout.to_plotly_json() if re.fullmatch(r"[xy]axis\d*", k)]:
        axis = layout[name]
        axis.automargin = True
        if axis.visible is False or axis.showticklabels is False:
            continue
        size = (axis.tickfont.size if axis.tickfont and axis.tickfont.size else None) or base
        title_size = (axis.title.font.size if axis.title and axis.title.font and axis.title.font.size else None) or base
        title = title_size * 1.5 + 6 if (axis.title and axis.title.text) else 0
        longest = max((_text_width(t, size) for t in _axis_labels(axis)), default=0.0)
        if name.startswith("y"):
            side = "r" if axis.side == "right" else "l"
            need[side] = max(need[side], longest + size + title + 8)
        else:
            angle = abs(float(axis.tickangle)) if isinstance(axis.tickangle, (int, float)) else 0.0
            if not angle and longest > 60 and len(_axis_labels(axis)) > 8:
                angle = 90.0  # plotly turns crowded long labels upright
            extent = longest * np.sin(np.radians(angle)) + size * (1.0 + np.cos(np.radians(angle)))
            if angle and title and axis.title.standoff is None:
                # kaleido places the title as if the labels were level: clear their rotated height
                axis.title.standoff = int(longest * np.sin(np.radians(angle))) + 6
            side = "t" if axis.side == "top" else "b"
            need[side] = max(need[side], extent + title + 8)
    if layout.title and layout.title.text:
        title_size = (layout.title.font.size if layout.title.font and layout.title.font.size else None) or base * 1.4
        lines = 1 + len(re.findall(r"<br\s*/?>", str(layout.title.text)))  # a note under the title adds lines
        need["t"] += title_size * (1.6 + 1.3 * (lines - 1)) + 10
    margin = {k: int(max(getattr(layout.margin, k) or 0, need[k], 10)) for k in need}
    layout.margin.update(margin)
    if layout.height:
        layout.height = int(layout.height + max(0, need["b"] - 40) * 0.5)
    return out


def figure_html(fig) -> str:
    """A standalone HTML page of the figure that opens offline (plotly.js inlined, no CDN)."""
    return export_ready(fig).to_html(include_plotlyjs=True, full_html=True)


def chromium_path() -> str | None:
    env = os.environ.get("BROWSER_PATH")
    if env and os.path.exists(env):
        return env
    for path in CHROMIUM_CANDIDATES:
        if os.path.exists(path):
            return path
    found = shutil.which("chromium")
    return found


def titled_svg(svg: bytes, title: str) -> bytes:
    """`svg` with a <title> element (what viewers, file managers and screen readers show) as the first
    child of its root; an empty title leaves it as it is."""
    import html

    title = " ".join(str(title).split())
    if not title:
        return svg
    text = svg.decode("utf-8")
    m = re.search(r"<svg\b[^>]*>", text)
    if m is None:
        return svg
    return (text[:m.end()] + f"<title>{html.escape(title, quote=False)}</title>" + text[m.end():]).encode("utf-8")


# Seconds a server-side render may take before it is tried once more with a fresh Chromium (one figure; a batch
# gets RENDER_SECONDS_EACH more per figure). Chromium started under heavy load can come up without the page that
# draws, and kaleido then waits for it without end: the wait is cut here instead.
RENDER_SECONDS = 60.0
RENDER_SECONDS_EACH = 5.0


def rendered(work, seconds: float, what: str):
    """work() (a kaleido render), given `seconds` to finish and tried once more if it does not; AttnvizError when
    neither try finished. A try that never finishes is left to itself in a daemon thread (its Chromium idles)."""
    import threading

    for _ in range(2):
        out: dict = {}

        def run():
            try:
                out["value"] = work()
            except BaseException as e:  # noqa: BLE001 (handed to the caller's thread)
                out["error"] = e

        t = threading.Thread(target=run, daemon=True, name="attnviz-render")
        t.start()
        t.join(seconds)
        if "error" in out:
            raise out["error"]
        if "value" in out:
            return out["value"]
    raise AttnvizError(f"The {what} did not finish within {seconds:.0f} s twice: Chromium on the server did not answer. "
                       "Try again in a moment; the camera icon on each figure saves a PNG in the browser meanwhile.")


def figure_image(fig, fmt: str = "svg", scale: float = 2.0, title: str = "") -> bytes:
    """SVG or PNG bytes rendered server-side by kaleido driving the installed Chromium. An SVG carries
    the figure's title (or `title` for a figure without one) as its <title>."""
    path = chromium_path()
    if path is None:
        raise AttnvizError("Server-side image export needs Chromium (Debian package 'chromium'; "
                           "`make test` installs it). The camera icon on each figure saves a PNG in the browser.")
    os.environ.setdefault("BROWSER_PATH", path)
    try:
        ready = export_ready(fig)
        data = rendered(lambda: ready.to_image(format=fmt, scale=scale if fmt == "png" else 1), RENDER_SECONDS,
                        f"{fmt.upper()} export")
    except AttnvizError:
        raise
    except Exception as e:  # kaleido/Chromium failures become a plain message
        raise AttnvizError(f"The {fmt.upper()} export failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    return titled_svg(data, figure_title(fig) or title) if fmt == "svg" else data


def figures_zip(named_figures, fmt: str = "png", scale: float = 2.0) -> bytes:
    """A .zip of many figures rendered server-side in one Chromium session (kaleido batch).

    named_figures: [(file stem, go.Figure)]; fmt: "png" or "svg". Stems are made unique."""
    import tempfile
    import zipfile

    import plotly.io as pio

    path = chromium_path()
    if path is None:
        raise AttnvizError("Exporting every figure needs Chromium on the server (Debian package 'chromium').")
    os.environ.setdefault("BROWSER_PATH", path)
    named = list(named_figures)
    if not named:
        raise AttnvizError("This page has no figures to export.")
    seen: dict[str, int] = {}
    stems = []
    for stem, _ in named:
        seen[stem] = seen.get(stem, 0) + 1
        stems.append(stem if seen[stem] == 1 else f"{stem}-{seen[stem]}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.join(tmp, f"{stem}.{fmt}") for stem in stems]
        try:
            ready = [export_ready(fig) for _, fig in named]
            # the batch writer ignores layout sizes (every image would be 700 x 500): pass them
            rendered(lambda: pio.write_images(ready, paths, format=fmt, scale=scale if fmt == "png" else 1,
                                              width=[f.layout.width or None for f in ready],
                                              height=[f.layout.height or None for f in ready]),
                     RENDER_SECONDS + RENDER_SECONDS_EACH * len(ready), "batch export")
        except AttnvizError:
            raise
        except Exception as e:
            raise AttnvizError(f"The batch export failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for p, (stem, fig) in zip(paths, named):
                if fmt == "svg":
                    with open(p, "rb") as f:
                        z.writestr(os.path.basename(p), titled_svg(f.read(), figure_title(fig) or stem))
                else:
                    z.write(p, os.path.basename(p))
            z.writestr("numbers.csv", "\n".join(f"## {stem}\n{figure_csv(fig)}" for stem, (_, fig) in zip(stems, named)))
    return buf.getvalue()


def result_npz(result) -> bytes:
    """The whole AttentionResult as .npz: arrays as arrays (the tokens too, as a string array), everything
    else in a JSON header."""
    arrays = {
        "attention": result.attention, "special_mask": result.special_mask,
        "continuation": result.continuation, "segment_ids": result.segment_ids,
        "token_ids": np.asarray(result.token_ids, dtype=np.int64),
        # the tokens as a plain string array (np.load(...)["tokens"]), beside the JSON header's copy
        "tokens": np.array(list(result.tokens), dtype=np.str_),
    }
    if result.decoder_tokens:
        arrays["decoder_tokens"] = np.array(list(result.decoder_tokens), dtype=np.str_)
    for name in ("decoder_attention", "cross_attention", "decoder_special_mask"):
        value = getattr(result, name)
        if value is not None:
            arrays[name] = value
    facts = result.facts
    header = {
        "format": "attnviz.AttentionResult", "version": 1,
        "tokens": list(result.tokens), "decoder_tokens": list(result.decoder_tokens or []) or None,
        "text": result.text, "text_pair": result.text_pair,
        "facts": {k: getattr(facts, k) for k in facts.__dataclass_fields__},
        "truncation": None if result.truncation is None else {
            "n_tokens_requested": result.truncation.n_tokens_requested,
            "n_tokens_kept": result.truncation.n_tokens_kept, "max_tokens": result.truncation.max_tokens},
        "ablated": sorted(list(x) for x in result.ablated),
        "shape": "attention is (layer, head, query, key) float32",
    }
    buf = io.BytesIO()
    np.savez_compressed(buf, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
    return buf.getvalue()


def load_result_npz(data: bytes):
    """Inverse of result_npz: an AttentionResult from .npz bytes (raises AttnvizError)."""
    from attnviz.types import AttentionResult, ModelFacts, Truncation

    try:
        z = np.load(io.BytesIO(data), allow_pickle=False)
        header = json.loads(bytes(z["header"]).decode())
        if header.get("format") != "attnviz.AttentionResult":
            raise ValueError("not an attnviz result")
        t = header["truncation"]
        extra = {name: z[name] for name in ("decoder_attention", "cross_attention", "decoder_special_mask") if name in z}
        return AttentionResult(
            attention=z["attention"], tokens=tuple(header["tokens"]),
            token_ids=tuple(int(i) for i in z["token_ids"]), special_mask=z["special_mask"],
            continuation=z["continuation"], segment_ids=z["segment_ids"], facts=ModelFacts(**header["facts"]),
            text=header["text"], text_pair=header["text_pair"],
            truncation=Truncation(**t) if t else None,
            decoder_tokens=tuple(header["decoder_tokens"]) if header.get("decoder_tokens") else None,
            ablated=frozenset(tuple(x) for x in header.get("ablated", [])), **extra)
    except (ValueError, KeyError, OSError, json.JSONDecodeError, TypeError) as e:
        raise AttnvizError(f"This file is not an attnviz result (.npz written by attnviz): {e}") from e
