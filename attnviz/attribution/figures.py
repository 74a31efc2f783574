"""Figures of the trust page: every method's scores over the text, their rank agreement, the deletion and
insertion curves, and the model-randomisation check (plotly)."""
from __future__ import annotations

import csv
import io

import numpy as np
import plotly.graph_objects as go

from attnviz.plotting import WEIGHT_FORMAT, attach_numbers, csv_number, no_si_prefixes, token_ticks

DIVERGING = [[0.0, "#2166ac"], [0.5, "#f7f7f7"], [1.0, "#b2182b"]]  # blue (negative) - white - red (positive)


def short(name: str) -> str:
    """A method name for an axis: its parenthesis on a second line."""
    return name.replace(" (", "<br>(")


def shortest(name: str) -> str:
    """A method name for a crowded axis: without its parenthesis (the hover has the full name)."""
    return name.split(" (")[0]


def _csv(header, rows) -> str:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(header)
    w.writerows(rows)
    return out.getvalue()


def methods_heatmap(scores: dict[str, np.ndarray], tokens, *, title: str, candidates=None) -> go.Figure:
    """Methods x tokens; each row divided by its own largest |score| (so every method spans -1..1 and
    the colours compare rankings, not units); the hover gives the exact score."""
    names = list(scores)
    raw = np.stack([np.asarray(scores[k], dtype=np.float64) for k in names])  # (methods, n)
    peak = np.abs(raw).max(axis=1, keepdims=True)
    scaled = np.divide(raw, peak, out=np.zeros_like(raw), where=peak > 0)
    n = raw.shape[1]
    labels = [f"{t} ({i})" for i, t in enumerate(tokens)]
    note = np.array(["" if candidates is None or candidates[i] else " · never removed" for i in range(n)])
    text = np.array([[f"{labels[i]}{note[i]}<br>{name}" for i in range(n)] for name in names])
    fig = go.Figure(go.Heatmap(
        z=np.round(scaled, 4), x=np.arange(n), y=np.arange(len(names)), customdata=raw, text=text,
        zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING, colorbar=dict(title="score /<br>row max |score|"),
        hovertemplate="%{text}<br>score: %{customdata:" + WEIGHT_FORMAT + "}<br>scaled: %{z:.3f}<extra></extra>",
        xgap=1 if n <= 64 else 0, ygap=2))
    fig.update_layout(title=title, height=130 + 58 * len(names), margin=dict(l=10, r=10, t=60, b=70),
                      xaxis=dict(title="input token", tickangle=-60, **token_ticks(tokens)),
                      yaxis=dict(tickmode="array", tickvals=list(range(len(names))),
                                 ticktext=[short(k) for k in names], autorange="reversed"))
    attach_numbers(fig, lambda: _csv(["method"] + labels, [[k] + [csv_number(v) for v in row]
                                                             for k, row in zip(names, raw)]))
    return no_si_prefixes(fig)


def spearman_heatmap(names, matrix: np.ndarray, *, title: str) -> go.Figure:
    """The annotated Spearman matrix; an undefined correlation (a constant method) is written out."""
    m = np.asarray(matrix, dtype=np.float64)
    text = [["undefined" if not np.isfinite(v) else f"{v:.2f}" for v in row] for row in m]
    k = len(names)
    fig = go.Figure(go.Heatmap(
        z=np.where(np.isfinite(m), m, np.nan), x=np.arange(k), y=np.arange(k), text=text, texttemplate="%{text}",
        zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING, colorbar=dict(title="Spearman ρ"),
        customdata=[[f"{names[i]} vs {names[j]}" for j in range(k)] for i in range(k)],
        hovertemplate="%{customdata}<br>ρ = %{text}<extra></extra>"))
    fig.update_layout(title=title, height=170 + 70 * k, margin=dict(l=10, r=10, t=60, b=10),
                      xaxis=dict(side="bottom", tickangle=-40, tickmode="array", tickvals=list(range(k)),
                                 ticktext=[shortest(x) for x in names]),
                      yaxis=dict(autorange="reversed", tickmode="array", tickvals=list(range(k)),
                                 ticktext=[short(x) for x in names]))
    attach_numbers(fig, lambda: _csv(["method"] + list(names), [[a] + [csv_number(v) if np.isfinite(v) else "undefined"
                                                                        for v in row] for a, row in zip(names, m)]))
    return no_si_prefixes(fig)


def perturbation_curves(curves: dict, which: str, *, ytitle: str) -> go.Figure:
    """One line per method: f after removing ('deletion') or keeping only ('insertion') its top-k tokens."""
    fig = go.Figure()
    for name, c in curves.items():
        y = c.deletion if which == "deletion" else c.insertion
        fig.add_trace(go.Scatter(
            x=[100 * f for f in c.fractions], y=y, mode="lines+markers", name=name, customdata=list(c.ks),
            hovertemplate=f"{name}<br>top %{{x:g}}% = %{{customdata}} tokens<br>{ytitle}: %{{y:.4g}}<extra></extra>"))
    first = next(iter(curves.values()), None)
    if first is not None:
        fig.add_hline(y=first.f_input, line=dict(dash="dot", color="grey"), annotation_text="f(full input)",
                      annotation_position="top right" if which == "deletion" else "bottom right")
    what = ("Deletion: the top k% removed (a steep fall = faithful)" if which == "deletion" else
            "Insertion: only the top k% kept (a fast rise = faithful)")
    fig.update_layout(title=what, height=470, margin=dict(l=60, r=10, t=50, b=10),
                      xaxis=dict(title="share of the removable tokens (%)", range=[-2, 102]),
                      yaxis=dict(title=ytitle),
                      legend=dict(orientation="h", yanchor="top", y=-0.22, font=dict(size=11)))
    attach_numbers(fig, lambda: _csv(["method", "fraction", "k", which],
                                     [[k, csv_number(f), kk, csv_number(v)] for k, c in curves.items()
                                      for f, kk, v in zip(c.fractions, c.ks,
                                                          c.deletion if which == "deletion" else c.insertion)]))
    return no_si_prefixes(fig)


def randomisation_bars(correlations: dict[str, float], *, title: str) -> go.Figure:
    """Spearman correlation between each method's scores on the trained and on the randomised model;
    near 1 = the method barely depends on what the model learned."""
    names = list(correlations)
    vals = np.array([correlations[k] for k in names], dtype=np.float64)
    defined = np.isfinite(vals)
    fig = go.Figure(go.Bar(
        x=np.arange(len(names)), y=np.where(defined, vals, 0.0),
        text=[f"{v:.2f}" if ok else "undefined" for v, ok in zip(vals, defined)], textposition="outside",
        marker_color=["#b2182b" if ok and v > 0.5 else "#4d4d4d" for v, ok in zip(vals, defined)],
        customdata=names, hovertemplate="%{customdata}<br>ρ = %{text}<extra></extra>"))
    fig.add_hline(y=0, line=dict(color="grey", width=1))
    fig.update_layout(title=title, height=400, margin=dict(l=60, r=10, t=60, b=10),
                      xaxis=dict(tickmode="array", tickvals=list(range(len(names))), tickangle=-35,
                                 ticktext=[shortest(k) for k in names]),
                      yaxis=dict(title="Spearman ρ, trained vs randomised", range=[-1.15, 1.15]))
    attach_numbers(fig, lambda: _csv(["method", "spearman"], [[k, csv_number(v) if np.isfinite(v) else "undefined"]
                                                             for k, v in zip(names, vals)]))
    return no_si_prefixes(fig)
