"""Figure builders for the Compare cells page that gradients.py has no counterpart for
(its compare_runs and gradient_ratio_over_training draw the gradients). No Streamlit here."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.charts.labels import STEP_AXIS
from app.charts.log_lines import empty_or, lines_by, log_axis
from app.charts.style import finish, legend_below
from app.charts.training import add_level


def loss_over_training(points: pd.DataFrame, units: str = "per batch", baseline: float | None = None,
                       each: str = "cell") -> go.Figure:
    """The loss of several runs against the training step on a log axis, one line per run in the
    order and colours of gradient_ratio_over_training; a dashed "baseline" line when given.

    points   columns step, run, loss
    units    what the loss is, for the axis title: "MSE", "cross-entropy, nats"
    each     what one run is, for the title: "cell", "start"
    """
    points = empty_or(points, ["step", "run", "loss"])
    fig = lines_by(points, "run", "step", "loss", "loss", "step")
    y_axis = log_axis(fig, *([] if baseline is None else [baseline]))
    if baseline is not None:  # across every step drawn, and 0 to 10 before the first one
        add_level(fig, baseline, pd.DataFrame({"step": [max([10, *points["step"]])]}), "baseline", y_axis)
    fig.update_xaxes(title_text=STEP_AXIS)
    fig.update_yaxes(title_text=f"loss ({units}, log)", **y_axis)
    return legend_below(finish(fig, f"Loss of each {each} over training"))  # at the right it left 94 px of plot
