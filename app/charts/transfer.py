"""Figure builders for the Transfer learning page: the two runs' held-out accuracy over training,
and the gradient each part of a run receives (exactly 0 while it is frozen). No Streamlit here."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.charts import runs
from app.charts.architectures import legend_under, level
from app.charts.labels import STEP_AXIS
from app.charts.log_lines import empty_or, lines_by
from app.charts.style import BLACK, BLUE, GREY, ORANGE, finish
from app.charts.training import whole_steps

COLOURS = {"from scratch": GREY, "pretrained": BLUE}
UNFREEZE = ORANGE


def step_axis(fig: go.Figure, last_step: int, unfreeze_at: int | None, what: str) -> go.Figure:
    """The training-step axis from 0 to the last step measured, or on to the step the recipe
    unfreezes at (a dotted line there, named at the top of the plot, so the class sees it coming)."""
    end = max(10, last_step, unfreeze_at or 0)
    if unfreeze_at:
        fig.add_vline(x=unfreeze_at, line=dict(color=UNFREEZE, dash="dot", width=1.5))
        fig.add_annotation(x=unfreeze_at, xref="x", y=1, yref="y domain", text=what, showarrow=False,
                           xanchor="right" if unfreeze_at > end / 2 else "left", yanchor="bottom",
                           font=dict(color=UNFREEZE, size=11), bgcolor="rgba(255,255,255,0.8)")
    fig.update_xaxes(title_text=STEP_AXIS, range=[-end * 0.02, end * 1.04])  # step 0's points off the axis line
    whole_steps(fig, end)
    return fig


def accuracy_over_training(log: pd.DataFrame, unfreeze_at: int | None, what: str,
                           colours: dict[str, str] = COLOURS, baseline: tuple[str, float] | None = None) -> go.Figure:
    """Held-out accuracy of each run (coloured by `colours`) against the step, a coin toss's 50%
    dashed, the step the recipe unfreezes at (None: it never does), and `baseline` (what, accuracy: a
    simpler model's on the same held-out rows, the line to beat) dotted in black."""
    log = empty_or(log, ["run", "step", "metric"])
    fig = runs.over_training(log, "metric", "held-out accuracy", colours, y_format=".1%")
    last = int(log["step"].max()) if len(log) else 0
    fig.add_trace(level(0.5, max(10, last, unfreeze_at or 0), "coin toss (50%)"))
    if baseline is not None:
        name, value = f"{baseline[0]} ({baseline[1]:.1%})", baseline[1]
        fig.add_trace(go.Scatter(x=[0, max(10, last, unfreeze_at or 0)], y=[value, value], name=name, mode="lines",
                                 line=dict(color=BLACK, dash="dot", width=2),
                                 hovertemplate=f"{name}<extra></extra>"))
    step_axis(fig, last, unfreeze_at, what)
    low = min([0.4, *(log["metric"] - 0.05)])  # from 40% (below a coin toss's 50%), lower if a run is
    fig.update_yaxes(title_text="held-out accuracy", tickformat=".0%", range=[max(0.0, low), 1.02])
    return legend_under(finish(fig, "Held-out accuracy of each run"))


def part_gradients(parts: pd.DataFrame, run: str, unfreeze_at: int | None, what: str) -> go.Figure:
    """‖∂L/∂θ‖ of each part of one run at each measured step (log axis; an exact 0, a frozen part,
    drawn at a floor and marked)."""
    rows = empty_or(parts[parts["run"] == run] if len(parts) else parts, ["run", "step", "part", "grad_norm"])
    rows = rows[rows["step"] > 0]  # no gradient exists before the first step
    fig = lines_by(rows, "part", "step", "grad_norm", "‖∂L/∂θ‖", "step")
    step_axis(fig, int(rows["step"].max()) if len(rows) else 0, unfreeze_at, what)
    fig.update_yaxes(title_text="‖∂L/∂θ‖ of the part (log)")
    return legend_under(finish(fig, f"Each part's gradient ({run})"))
