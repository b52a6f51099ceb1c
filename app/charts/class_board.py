"""The teacher's board's figures: the class's runs of one lesson over the lesson's measured band (the
class is an ensemble), and the class's answers to a lesson's question. No Streamlit here."""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go

from app.charts.architectures import legend_under
from app.charts.labels import STEP_AXIS
from app.charts.lesson_band import translucent
from app.charts.style import BLUE, GREEN, GREY, finish

HEIGHT = 360  # px: on a projector, beside nothing else


def class_runs(curves: dict[str, tuple[str, list[list[float]]]], band: pd.DataFrame | None, members: int, title: str,
               y_title: str, legend: str | None = None) -> go.Figure:
    """Each student's curve (their store key -> (name, [[step, value], ...]): two students may share a
    name) as a thin line over the band (step, low, high) the lesson's `members` measured runs span; no
    band when the lesson has none of this series. A name is text, escaped: plotly reads a trace's
    name and meta as its own markup. `legend`: what the curves' one legend entry says (the class's by
    default)."""
    fig = go.Figure()
    if band is not None and len(band):
        fig.add_trace(go.Scatter(x=band["step"], y=band["high"], mode="lines", line=dict(width=0), showlegend=False,
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=band["step"], y=band["low"], mode="lines", line=dict(width=0), fill="tonexty",
                                 fillcolor=translucent(BLUE, 0.2), name=f"{members} measured runs",
                                 customdata=band["high"],
                                 hovertemplate="step %{x:,}: measured %{y:.3g} to %{customdata:.3g}<extra></extra>"))
    legend = legend or f"the class: {len(curves)} student{'s' * (len(curves) != 1)}, a line each"
    colour = translucent(GREY, 0.8)
    for index, (name, points) in enumerate(sorted(curves.values())):  # one legend entry stands for them all
        shown = html.escape(name)
        # A curve of one point (a run that diverged before its second held-out look) is a dot: as a line
        # it drew nothing, and the legend counted a student the figure did not show.
        fig.add_trace(go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points],
                                 mode="lines" if len(points) > 1 else "markers", marker=dict(color=colour, size=6),
                                 name=legend if index == 0 else shown, showlegend=index == 0, legendgroup="class",
                                 line=dict(color=colour, width=1.2), meta=shown,
                                 hovertemplate="%{meta}<br>step %{x:,}: %{y:.4g}<extra></extra>"))
    last = max([25, *(p[0] for _, points in curves.values() for p in points),
                *([] if band is None or not len(band) else [int(band["step"].max())])])
    # from just before step 0, so a dot there shows whole (a class of dots alone spanned -1 to 1)
    fig.update_xaxes(title_text=STEP_AXIS, range=[-0.03 * last, last * 1.04])
    fig.update_yaxes(title_text=y_title)
    return legend_under(finish(fig, title, height=HEIGHT))


def answers(counts: dict[str, int], right: str | None, title: str) -> go.Figure:
    """How many students chose each answer, every choice shown (0 too); once revealed (`right`
    given), the right one green."""
    choices = list(counts)
    colours = [GREEN if right == choice else GREY if right is not None else BLUE for choice in choices]
    fig = go.Figure(go.Bar(x=[counts[c] for c in choices], y=choices, orientation="h", marker_color=colours,
                           text=[str(counts[c]) for c in choices], textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{x} students<extra></extra>"))
    few = max(counts.values(), default=0) < 10
    fig.update_xaxes(title_text="students", rangemode="tozero", dtick=1 if few else None)
    fig.update_yaxes(title_text="answer", autorange="reversed", type="category")
    return finish(fig, title, height=max(220, 90 + 45 * len(choices)))
