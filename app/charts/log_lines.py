"""Curves on log axes, where gradients live: exact zeros drawn at a floor and marked, bands,
and one line per run or layer. No streamlit here."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.style import BLACK, BLUE, GREEN, ORANGE, PURPLE, SKY_BLUE, VERMILLION, axis
from app.charts.training import note_empty

PALETTE = (BLUE, ORANGE, GREEN, PURPLE, SKY_BLUE, BLACK)
DASHES = ("solid", "dash", "dot", "dashdot")


def floor_of(*arrays) -> float:
    """Where an exact 0 is drawn on a log axis: a tenth of the smallest positive value (1 if none)."""
    values = np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in arrays])
    positive = values[np.isfinite(values) & (values > 0)]
    return float(positive.min()) / 10 if len(positive) else 1.0


def log_line(x, values, name: str, colour: str, floor: float, what: str, x_label: str = "t",
             dash: str = "solid", width: float = 1.8, markers: bool | None = None) -> go.Scatter:
    """A curve for a log axis: exact zeros drawn at `floor`; the hover gives every exact value.
    Markers when asked, else while there are fewer than 50 points."""
    values = np.asarray(values, dtype=float)
    zero = values == 0
    note = np.where(zero, f" (exactly 0; drawn at {floor:.2g})", "")
    markers = len(values) < 50 if markers is None else markers
    return go.Scatter(
        x=np.asarray(x), y=np.where(zero, floor, values), customdata=values, text=note, name=name,
        mode="lines+markers" if markers else "lines", line=dict(color=colour, dash=dash, width=width),
        marker=dict(size=5), legendgroup=name,
        hovertemplate=f"{name}<br>{x_label} %{{x}}<br>{what} %{{customdata:.6g}}%{{text}}<extra></extra>",
    )


def mark_zeros(fig: go.Figure, floor: float, x_label: str = "t") -> None:
    """A triangle on every point of a log_line drawn at `floor` because it is exactly 0: filled in its line's
    colour (which part or run is 0), outlined in vermillion (it is exactly 0)."""
    points = [(x, t.name, t.line.color) for t in fig.data if t.customdata is not None
              for x, v in zip(t.x, t.customdata, strict=True) if v == 0]
    if points:
        x, names, colours = zip(*points, strict=True)
        fig.add_trace(go.Scatter(
            x=x, y=[floor] * len(x), text=names, name=f"exactly 0 (drawn at {floor:.2g})", mode="markers",
            marker=dict(symbol="triangle-down", size=11, color=list(colours), line=dict(color=VERMILLION, width=2)),
            hovertemplate=f"%{{text}}<br>{x_label} %{{x}}: exactly 0<extra></extra>",
        ))


def log_axis(fig: go.Figure, *extra: float) -> dict:
    """charts.axis over every log_line's drawn values (and `extra`), always log."""
    drawn = [v for t in fig.data if t.customdata is not None for v in t.y]
    return axis([*drawn, *extra]) | dict(type="log")


def band(fig: go.Figure, low: float, high: float, text: str, top: bool) -> None:
    """A light vermillion band across the plot from low to high (data values on a log y axis),
    its text on a white patch inside it at the left, against its top edge (top=True) or its bottom."""
    fig.add_hrect(y0=low, y1=high, fillcolor=VERMILLION, opacity=0.09, line_width=0, layer="below")
    fig.add_annotation(x=0.005, xref="x domain", y=np.log10(high if top else low), text=text, showarrow=False,
                       xanchor="left", yanchor="top" if top else "bottom", font=dict(color=VERMILLION, size=11),
                       bgcolor="rgba(255,255,255,0.8)")



def lines_by(frame: pd.DataFrame, by: str, x: str, y: str, what: str, x_label: str, markers: bool | None = None,
             dash_by: str | None = None, name_of: Callable | None = None) -> go.Figure:
    """One log_line per value of `by`, in order of appearance, sorted by x; zeros marked. Colours
    follow the palette, then the dash changes. With `dash_by`, one line per value of both: a colour
    per value of `by`, solid for the first value of `dash_by` to appear and dashed for the next.
    name_of(the group's key) names each line (str of the key by default)."""
    fig, floor = go.Figure(), floor_of(frame[y])
    colours = {value: k for k, value in enumerate(dict.fromkeys(frame[by]))}
    dashes = {value: k for k, value in enumerate(dict.fromkeys(frame[dash_by]))} if dash_by else {}
    for key, rows in frame.groupby([by, dash_by] if dash_by else by, sort=False):
        rows = rows.sort_values(x)
        k = colours[key[0] if dash_by else key]
        dash = DASHES[dashes[key[1]] % len(DASHES)] if dash_by else DASHES[k // len(PALETTE) % len(DASHES)]
        name = name_of(key) if name_of else str(key)
        fig.add_trace(log_line(rows[x], rows[y], name, PALETTE[k % len(PALETTE)], floor, what, x_label, dash=dash,
                               markers=markers))
    mark_zeros(fig, floor, x_label)
    fig.update_yaxes(**log_axis(fig))
    note_empty(fig, frame)
    return fig


def empty_or(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The frame, or (with no rows) an empty one that has the columns."""
    return frame if len(frame) else pd.DataFrame(columns=columns)


