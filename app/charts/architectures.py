"""Figure builders for the Compare architectures page: the runs' logs in, plotly figures out. Each
network keeps its colour in every figure (the palette in the order of the runs). No Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.labels import STEP_AXIS
from app.charts.log_lines import PALETTE, empty_or, lines_by, log_axis
from app.charts.style import GREY, finish, legend_below
from app.charts.training import add_level

TIMES_ROW = 42  # px per network in the step-time bars


def loss_over_training(log: pd.DataFrame, units: str, baseline: float | None = None) -> go.Figure:
    """The held-out loss of every run against the training step, log axis, one line per run; a
    dashed "baseline" line when given.

    log    columns run, step, loss
    units  what the loss is, for the axis title: "cross-entropy, nats"
    """
    log = empty_or(log, ["run", "step", "loss"])
    fig = lines_by(log, "run", "step", "loss", "held-out loss", "step")
    y_axis = log_axis(fig, *([] if baseline is None else [baseline]))
    if baseline is not None:  # across every step drawn, and 0 to 10 before the first one
        add_level(fig, baseline, pd.DataFrame({"step": [max([10, *log["step"]])]}), "baseline", y_axis)
    fig.update_xaxes(title_text=STEP_AXIS)
    fig.update_yaxes(title_text=f"held-out loss ({units}, log)", **y_axis)
    return legend_below(finish(fig, "Held-out loss of each network over training"))


def accuracy_by_length(by_length: pd.DataFrame, title: str, length_axis: str, chance: float | None = None,
                       trained_at: int | None = None) -> go.Figure:
    """Held-out accuracy against length, one line with markers per run, on a 0-100% axis; a dashed
    "chance" level when given, and a dotted vertical line at the length trained on when given.

    by_length  columns run, length, accuracy (a share, 0-1)
    """
    by_length = empty_or(by_length, ["run", "length", "accuracy"])
    fig = go.Figure()
    for k, (run, rows) in enumerate(by_length.groupby("run", sort=False)):
        rows = rows.sort_values("length")
        fig.add_trace(go.Scatter(
            x=rows["length"], y=rows["accuracy"], name=run, mode="lines+markers",
            line=dict(color=PALETTE[k % len(PALETTE)], width=1.8), marker=dict(size=6),
            hovertemplate=f"{run}<br>{length_axis} %{{x}}<br>accuracy %{{y:.1%}}<extra></extra>",
        ))
    lengths = by_length["length"]
    if chance is not None:
        span = pd.DataFrame({"step": [lengths.max() if len(lengths) else 10]})
        add_level(fig, chance, span, "chance", dict(type="linear"))
    if trained_at is not None:
        fig.add_vline(x=trained_at, line=dict(color=GREY, dash="dot", width=1.5))
        fig.add_annotation(x=trained_at, y=1.0, yref="y domain", text=f"trained at {trained_at}", showarrow=False,
                           xanchor="left", yanchor="top", font=dict(color=GREY, size=11),
                           bgcolor="rgba(255,255,255,0.8)")
    fig.update_xaxes(title_text=length_axis, rangemode="tozero")
    fig.update_yaxes(title_text="held-out accuracy", tickformat=".0%", range=[0, 1.05])
    return legend_below(finish(fig, title))


def step_times(times: pd.DataFrame) -> go.Figure:
    """Wall-clock milliseconds per training step of each run: a bar at the median, a whisker from
    the first to the third quartile, the median written beside it; a run not yet timed has none.

    times  columns run, ms, low, high, steps (how many steps were timed)
    """
    times = empty_or(times, ["run", "ms", "low", "high", "steps"])
    timed = times["steps"] > 0
    colours = [PALETTE[k % len(PALETTE)] for k in range(len(times))]
    fig = go.Figure(go.Bar(
        y=times["run"], x=times["ms"], orientation="h", marker_color=colours,
        customdata=times[["low", "high", "steps"]],
        error_x=dict(type="data", symmetric=False, array=times["high"] - times["ms"],
                     arrayminus=times["ms"] - times["low"], color=GREY, thickness=1.2),
        text=[f"{ms:.1f} ms" if ok else "not yet timed" for ms, ok in zip(times["ms"], timed, strict=True)],
        textposition="outside", cliponaxis=False, showlegend=False,
        hovertemplate="%{y}<br>median %{x:.2f} ms a step<br>quartiles %{customdata[0]:.2f}-%{customdata[1]:.2f} ms"
                      "<br>of the latest %{customdata[2]} steps<extra></extra>",
    ))
    top = np.nanmax(times["high"]) if timed.any() else 1.0
    fig.update_xaxes(title_text="ms per training step (median; whisker: quartiles)", range=[0, top * 1.35])
    fig.update_yaxes(autorange="reversed")  # the runs top to bottom in their order
    height = 110 + TIMES_ROW * len(times)
    return finish(fig, "Wall-clock time per training step", height=height)
