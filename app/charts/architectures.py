"""Figure builders for the Compare architectures page: the runs' logs in, plotly figures out. Each
network keeps its colour in every figure and on every task (`colours`: run -> colour, from
colours_of). No Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.log_lines import PALETTE, empty_or
from app.charts.style import GREY, LEGEND_ROW, UNDER_AXIS, finish, legend_below, legend_rows

TIMES_ROW = 42  # px per network in the step-time bars
MARKED = 12  # points a line may have and keep its markers (32 positions of a window were a smear)
# The width a legend under a plot gets in half of a 1024 px page with the sidebar open (measured in
# chromium: "tanh RNN" and "LSTM" share a row, "GRU" and "bidirectional LSTM" do not). With room for
# fewer rows (legend_below plans for 230 px) plotly pushed the legend up onto the x axis's title.
NARROWEST_LEGEND = 165
TITLE_LINE = 16  # px, a line of a 12 px axis title


def colours_of(names) -> dict[str, str]:
    """A colour for each of `names` (every network the page may show, in order), from the palette."""
    return {name: PALETTE[k % len(PALETTE)] for k, name in enumerate(names)}


def legend_under(fig: go.Figure) -> go.Figure:
    """legend_below, under every line of the x axis's title, with room under the plot for every row
    the legend takes at NARROWEST_LEGEND: the figure and its bottom margin grow by the same, so the
    plot keeps its height."""
    extra = LEGEND_ROW * max(0, legend_rows(fig, width=NARROWEST_LEGEND) - legend_rows(fig))
    title_lines = str(fig.layout.xaxis.title.text).count("<br>")
    fig = legend_below(fig, under_axis=UNDER_AXIS + TITLE_LINE * title_lines)
    return fig.update_layout(height=fig.layout.height + extra, margin=dict(b=fig.layout.margin.b + extra))


def level(value: float, x_end: float, name: str) -> go.Scatter:
    """A dashed grey line at `value` from 0 to `x_end`, named in the legend (a label on the plot
    would cover the lines that run along it)."""
    return go.Scatter(x=[0, x_end], y=[value, value], name=name, mode="lines",
                      line=dict(color=GREY, dash="dash", width=1.5), hovertemplate=f"{name} {value:.4g}<extra></extra>")


def accuracy_by_length(by_length: pd.DataFrame, colours: dict[str, str], title: str, length_axis: str,
                       chance: float | None = None, trained_at: int | None = None) -> go.Figure:
    """Held-out accuracy against length, one line per run (markers while a line has at most
    MARKED points), on a 0-100% axis; a dashed "chance" level when given, and a dotted vertical line
    at the length trained on when given.

    by_length  columns run, length, accuracy (a share, 0-1)
    """
    by_length = empty_or(by_length, ["run", "length", "accuracy"])
    fig = go.Figure()
    for run, rows in by_length.groupby("run", sort=False):
        rows = rows.sort_values("length")
        fig.add_trace(go.Scatter(
            x=rows["length"], y=rows["accuracy"], name=run, mode="lines+markers" if len(rows) <= MARKED else "lines",
            line=dict(color=colours[run], width=1.8), marker=dict(size=6),
            hovertemplate=f"{run}<br>{length_axis} %{{x}}<br>accuracy %{{y:.1%}}<extra></extra>",
        ))
    lengths = by_length["length"]
    if chance is not None:
        fig.add_trace(level(chance, lengths.max() if len(lengths) else 10, "chance"))
    if trained_at is not None:  # named in the axis title: a label on the plot covered the 100% line's points
        fig.add_vline(x=trained_at, line=dict(color=GREY, dash="dot", width=1.5))
        length_axis += f"<br>(dotted: trained at {trained_at})"
    fig.update_xaxes(title_text=length_axis, rangemode="tozero")
    fig.update_yaxes(title_text="held-out accuracy", tickformat=".0%", range=[0, 1.05])
    return legend_under(finish(fig, title))


def step_times(times: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Wall-clock milliseconds per training step of each run: a bar at the median, a whisker from
    the first to the third quartile, the median written beside it; a run not yet timed has none.

    times  columns run, ms, low, high, steps (how many steps were timed)
    """
    times = empty_or(times, ["run", "ms", "low", "high", "steps"])
    timed = times["steps"] > 0
    fig = go.Figure(go.Bar(
        y=times["run"], x=times["ms"], orientation="h", marker_color=[colours[run] for run in times["run"]],
        customdata=times[["low", "high", "steps"]],
        error_x=dict(type="data", symmetric=False, array=times["high"] - times["ms"],
                     arrayminus=times["ms"] - times["low"], color=GREY, thickness=1.2),
        showlegend=False,
        hovertemplate="%{y}<br>median %{x:.2f} ms a step<br>quartiles %{customdata[0]:.2f}-%{customdata[1]:.2f} ms"
                      "<br>of the latest %{customdata[2]} steps<extra></extra>",
    ))
    fig.add_trace(go.Scatter(  # the median written past the whisker's end, where it covers neither
        y=times["run"][timed], x=times["high"][timed], text=[f" {ms:.1f} ms" for ms in times["ms"][timed]],
        mode="text", textposition="middle right", cliponaxis=False, showlegend=False, hoverinfo="skip",
    ))
    if not timed.any():
        fig.add_annotation(text="no step timed yet: press Step or Play", xref="x domain", yref="y domain", x=0.5,
                           y=0.5, showarrow=False, font=dict(size=13, color=GREY), bgcolor="white")
    top = np.nanmax(times["high"]) if timed.any() else 1.0
    fig.update_xaxes(title_text="ms per training step", range=[0, top * 1.45])
    fig.update_yaxes(autorange="reversed")  # the runs top to bottom in their order
    height = 110 + TIMES_ROW * len(times)
    return finish(fig, "Wall-clock time per training step", height=height)
