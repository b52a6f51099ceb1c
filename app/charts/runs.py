"""The one family of figures of runs trained side by side (Compare cells, Compare architectures,
Why √d_k, Transfer learning): each run's log, one line per run against the training step, in the
page's colours for its runs. Their logs share one schema: run, step, loss, metric, and what a page's
runs measure besides (RoundRobin.log_frame). No Streamlit here."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.charts.architectures import legend_under, level
from app.charts.labels import STEP_AXIS
from app.charts.log_lines import PALETTE, empty_or, lines_by, log_axis
from app.charts.style import finish
from app.charts.training import whole_steps


def over_training(log: pd.DataFrame, column: str, y_title: str, colours: dict[str, str] | None = None,
                  log_y: bool = False, y_format: str = ".4g") -> go.Figure:
    """One line per run of `column` against the training step, in `colours` (run -> colour; else
    the palette's, in the runs' order): on a log axis (exact zeros drawn at a floor and marked,
    log_lines), or on a linear one from 0 with a marker at every measurement."""
    log = empty_or(log, ["run", "step", column])
    colours = colours or {run: PALETTE[k % len(PALETTE)] for k, run in enumerate(log["run"].unique())}
    if log_y:
        fig = lines_by(log, "run", "step", column, y_title, "step")
        fig.for_each_trace(lambda t: t.update(line_color=colours[t.name]), selector=lambda t: t.name in colours)
    else:
        fig = go.Figure([go.Scatter(x=rows["step"], y=rows[column], name=run, mode="lines+markers",
                                    line=dict(color=colours.get(run), width=1.8), marker=dict(size=5),
                                    hovertemplate=f"{run}<br>step %{{x}}<br>{y_title} %{{y:{y_format}}}<extra></extra>")
                         for run, rows in log.groupby("run", sort=False)])
        fig.update_yaxes(rangemode="tozero")
    fig.update_xaxes(title_text=STEP_AXIS)
    whole_steps(fig, log["step"].max() if len(log) else 0)
    return fig.update_yaxes(title_text=y_title)


def loss_over_training(log: pd.DataFrame, units: str, baseline: float | None = None,
                       colours: dict[str, str] | None = None, what: str = "held-out loss",
                       title: str = "Held-out loss of each network over training") -> go.Figure:
    """The loss of every run against the training step on a log axis, with a dashed "baseline"
    (the loss of always predicting the same) when given.

    log    columns run, step, loss
    units  what the loss is, for the axis title: "MSE", "cross-entropy, nats"
    what   the loss's name in each point's hover: "held-out loss", or "loss" for a batch's
    """
    log = empty_or(log, ["run", "step", "loss"])
    fig = over_training(log, "loss", what, colours, log_y=True)
    y_axis = log_axis(fig, *([] if baseline is None else [baseline]))
    if baseline is not None:  # across every step drawn, and 0 to 10 before the first one
        fig.add_trace(level(baseline, max([10, *log["step"]]), "baseline"))
    # A log axis, as its ticks show: "held-out loss (cross-entropy, nats, log)" ran into the title.
    fig.update_yaxes(title_text=f"loss ({units})", **y_axis)
    return legend_under(finish(fig, title))
