"""Figures of a training run: loss, metric and gradient norm per step (the Trainer's history).

No streamlit here, so every figure can be tested and exported.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.labels import LOSS_UNITS, STEP_AXIS
from app.charts.style import BLACK, BLUE, GREEN, GREY, HEIGHT, ORANGE, VERMILLION, axis, finish, top_of

MAX_POINTS = 2000
WHOLE_TICKS = 20  # steps up to which the step axis gets explicit whole-number ticks
EMPTY = "No training steps yet —<br>press Step or Play"
COLUMNS = ["step", "loss", "metric", "grad_norm", "grad_norm_clipped", "diverged"]
HELD_OUT_EMPTY = pd.DataFrame({"step": [], "loss": [], "metric": []}, dtype=float)
CURVES_HEIGHT = HEIGHT + 60  # the legend under the panels
UNDER = dict(orientation="h", x=0, xanchor="left", y=-0.3, yanchor="top")  # a legend that covers no data,
# nor the title: under the x axis title


def steps_of(history: pd.DataFrame) -> pd.DataFrame:
    """The history with its columns even when it has no rows (a fresh Trainer's frame has none)."""
    return history if len(history) else pd.DataFrame(columns=COLUMNS, dtype=float)


def thin(history: pd.DataFrame, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """At most max_points rows, evenly spaced in steps, always including the first and the last.
    By step, not by row: past 4096 steps the Trainer keeps recent steps densely and older ones
    sparsely, so evenly spaced rows would crowd the end of the curve."""
    if len(history) <= max_points:
        return history
    steps = history["step"].to_numpy()  # ascending
    wanted = np.linspace(steps[0], steps[-1], max_points)  # [max_points]
    rows = np.unique(np.searchsorted(steps, wanted).clip(0, len(steps) - 1))
    return history.iloc[rows]


def line(x, y, name: str, colour: str, label: str, width: float = 1.8) -> go.Scatter:
    """A curve over training steps, with markers while there are few enough to see them."""
    return go.Scatter(
        x=x, y=y, name=name, mode="lines+markers" if len(x) < 50 else "lines",
        line=dict(color=colour, width=width), marker=dict(size=5),
        hovertemplate=f"step %{{x}}<br>{label} %{{y:.6g}}<extra></extra>",
    )


def add_level(fig: go.Figure, value: float, history: pd.DataFrame, name: str, yaxis: dict, **cell) -> None:
    """A dashed horizontal line at `value` from step 0 to the last step (10 before any), with
    its name on a white patch at its right end."""
    last = history["step"].iloc[-1] if len(history) else 10
    fig.add_trace(go.Scatter(
        x=[0, last], y=[value, value], name=name, mode="lines", line=dict(color=GREY, dash="dash", width=1.5),
        hovertemplate=f"{name} {value:.6g}<extra></extra>",
    ), **cell)
    y = np.log10(value) if yaxis["type"] == "log" else value  # annotations on a log axis take log10
    fig.add_annotation(x=last, y=y, text=name, showarrow=False, xanchor="right", yanchor="bottom",
                       font=dict(color=GREY, size=11), bgcolor="rgba(255,255,255,0.8)", **cell)


def add_diverged(fig: go.Figure, history: pd.DataFrame, top: float, column: str, label: str, **cell) -> None:
    """A vermillion X at the top of the axis range at every step that diverged, its hover
    giving that step's `column` value."""
    rows = history[history["diverged"].astype(bool)]
    if len(rows):
        fig.add_trace(go.Scatter(
            x=rows["step"], y=[top] * len(rows), customdata=rows[column], name="diverged", mode="markers",
            marker=dict(symbol="x", size=13, color=VERMILLION, line=dict(width=1, color=VERMILLION)),
            cliponaxis=False, hovertemplate=f"diverged at step %{{x}}<br>{label} %{{customdata:.6g}}<extra></extra>",
        ), **cell)


def whole_steps(fig: go.Figure, last_step: float) -> None:
    """Step ticks at whole numbers: over the first few steps plotly's own ticks fall at 0.5,
    1.5...; up to WHOLE_TICKS steps the ticks are every 1 or 2 steps (at most 11 of them), past
    that plotly's own (1-2-5 spacing, every 2 steps or more) are whole already."""
    if last_step <= WHOLE_TICKS:
        fig.update_xaxes(tick0=0, dtick=1 if last_step <= 10 else 2)
    fig.update_xaxes(tickformat="d")


def note_empty(fig: go.Figure, history: pd.DataFrame) -> None:
    """Before the first step: the hint, over empty axes from step 0 to 10."""
    if not len(history):
        fig.add_annotation(text=EMPTY, xref="x domain", yref="y domain", x=0.5, y=0.8, showarrow=False,
                           font=dict(size=13, color=GREY), bgcolor="white")
        fig.update_xaxes(range=[0, 10])


def training_curves(history: pd.DataFrame, metric_name: str, baseline_loss: float | None = None,
                    held_out: pd.DataFrame | None = None, best: tuple[int, float, float] | None = None,
                    marks: Sequence[tuple[int, str]] = (), baseline_metric: tuple[str, float] | None = None
                    ) -> go.Figure:
    """Loss (left; log y when every loss > 0) and the task's metric (right) against the step: on
    each step's training batch (solid) and on held-out data (dashed, same colours).

    history        Trainer.history_frame(): step, loss, metric, diverged (one row per step)
    metric_name    "accuracy" (axis fixed to 0..1), "R²" (axis from at most -1 to 1) or another
    baseline_loss  a dashed "baseline" line on the loss panel, e.g. the MSE of predicting the mean
    baseline_metric  (what, value): a dashed line on the metric panel, a simpler model's held-out
                   metric on the same split (Task.baseline_metric: a bag of words)
    held_out       the held-out log: step, loss, metric (a row every few steps), drawn as given
    best           (step, loss, metric) of the lowest held-out loss: a ringed marker on both panels
    marks          (step, text) of each setting change or restore: a dotted vertical line across
                   both panels, its text beside it on the loss panel

    More than 2000 steps are drawn as 2000 evenly spaced ones, always including the first and
    the last (the title then says so). The loss axis covers the steps that did not diverge, the
    held-out losses and the baseline; a diverged step is a red X at its top, its hover giving the
    loss. The legend sits under the panels, where it covers no data.
    """
    history = steps_of(history)
    held_out = HELD_OUT_EMPTY if held_out is None else held_out
    shown = thin(history)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16)  # room for the right axis title
    fine = history[~history["diverged"].astype(bool)]
    losses = [*fine["loss"], *held_out["loss"], *([] if baseline_loss is None else [baseline_loss])]
    loss_axis = axis(losses)
    fig.add_trace(line(shown["step"], shown["loss"], "training loss", BLUE, "training loss"), row=1, col=1)
    fig.add_trace(line(shown["step"], shown["metric"], f"training {metric_name}", GREEN, metric_name), row=1, col=2)
    if len(held_out):
        for column, colour, col in (("loss", BLUE, 1), ("metric", GREEN, 2)):
            name = f"held-out {'loss' if column == 'loss' else metric_name}"
            trace = line(held_out["step"], held_out[column], name, colour, name, width=2.4)
            fig.add_trace(trace.update(line_dash="dash", marker_symbol="circle-open"), row=1, col=col)
    if best is not None:
        add_best(fig, *best, metric_name)
    if baseline_loss is not None:
        add_level(fig, baseline_loss, history, "baseline", loss_axis, row=1, col=1)
    if baseline_metric is not None:
        what, value = baseline_metric
        add_level(fig, value, history, f"{what} (held-out)", {"type": "linear"}, row=1, col=2)
    add_diverged(fig, history, top_of(loss_axis), "loss", "loss", row=1, col=1)
    for step, text in marks:
        add_mark(fig, step, text)
    units = LOSS_UNITS.get(metric_name, "per batch")
    log = ", log scale" if loss_axis["type"] == "log" else ""
    fig.update_yaxes(title_text=f"loss ({units}{log})", **loss_axis, row=1, col=1)
    metric_title, metric_span = metric_name, None
    if metric_name == "accuracy":
        metric_title, metric_span = "accuracy (fraction correct)", [0, 1.02]
    elif metric_name == "R²":
        metrics = np.asarray([*history["metric"], *held_out["metric"]], dtype=float)
        lowest = np.nanmin(metrics) if np.isfinite(metrics).any() else 0.0
        metric_title = "R² (1 = perfect, 0 = mean)" if lowest >= -1 else "R² (axis cut at −1)"
        metric_span = [max(min(lowest, 0.0), -1.0) - 0.02, 1.02]
    fig.update_yaxes(title_text=metric_title, range=metric_span, row=1, col=2)
    fig.update_xaxes(title_text="training step")  # two panels: STEP_AXIS would run into its neighbour
    last = max([*history["step"], *held_out["step"], *(step for step, _ in marks)], default=0)
    whole_steps(fig, last if len(history) else max(last, 10))
    for trace in fig.data:  # the legend names what each line style means, once
        trace.showlegend = trace.name in {"training loss", "held-out loss"} or trace.name.startswith("best step")
    fig.update_layout(legend=UNDER)
    note_empty(fig, history)
    if not len(history) and len(held_out):
        fig.update_xaxes(range=[-0.5, 10])  # the step-0 evaluation whole, not cut by the axis
    drawn = f" ({len(history):,} steps, {len(shown):,} drawn)" if len(shown) < len(history) else ""
    return finish(fig, f"Training: loss and {metric_name}{drawn}", height=CURVES_HEIGHT)


def add_best(fig: go.Figure, step: int, loss: float, metric: float, metric_name: str) -> None:
    """A large ring on each held-out curve at the step of the lowest held-out loss."""
    for name, value, colour, col, label in (
        (f"best step ({step:,}): lowest held-out loss", loss, BLUE, 1, "loss"),
        (f"held-out {metric_name} at the best step", metric, GREEN, 2, metric_name),
    ):
        fig.add_trace(go.Scatter(
            x=[step], y=[value], name=name, mode="markers", legendgroup="best",
            marker=dict(symbol="circle-open", size=16, color=colour, line=dict(width=3)),
            hovertemplate=f"lowest held-out loss at step %{{x}}<br>held-out {label} %{{y:.6g}}<extra></extra>",
        ), row=1, col=col)


def add_mark(fig: go.Figure, step: int, text: str) -> None:
    """A setting change at `step`: a dotted vertical line across both panels, and `text` along
    it, reading upwards, at the top of the loss panel."""
    for col in (1, 2):
        fig.add_vline(x=step, line=dict(color=BLACK, dash="dot", width=1.3), row=1, col=col)
    fig.add_annotation(
        x=step, xref="x", y=1, yref="y domain", text=text, showarrow=False, textangle=-90,
        xanchor="right", yanchor="top", font=dict(size=11, color=BLACK), bgcolor="rgba(255,255,255,0.6)",
    )


def gradient_norm_curve(history: pd.DataFrame, clip_norm: float | None) -> go.Figure:
    """The global L2 norm of the gradient (all parameters together) before and after clipping,
    against the step, on a log axis; a dashed "clip threshold" line at clip_norm when given.

    history    Trainer.history_frame(): step, grad_norm, grad_norm_clipped, diverged
    Downsampled like training_curves (at most 2000 points, the last always kept); a diverged
    step is a red X at the top of the axis, its hover giving the norm.
    """
    history = steps_of(history)
    shown = thin(history)
    fig = go.Figure()
    fine = history[~history["diverged"].astype(bool)]
    norms = np.array([*fine["grad_norm"], *fine["grad_norm_clipped"], *([] if clip_norm is None else [clip_norm])])
    norm_axis = axis(norms[norms > 0]) | dict(type="log")  # no positive norm yet: 1 to 10
    fig.add_trace(line(shown["step"], shown["grad_norm"], "before clipping", ORANGE, "‖g‖ before", width=3.5))
    fig.add_trace(line(shown["step"], shown["grad_norm_clipped"], "after clipping", BLUE, "‖g‖ after", width=1.4))
    if clip_norm is not None:
        add_level(fig, clip_norm, history, "clip threshold", norm_axis)
    add_diverged(fig, history, top_of(norm_axis), "grad_norm", "‖g‖ before")
    fig.update_yaxes(title_text="‖g‖₂ of all parameters (log)", **norm_axis)
    fig.update_xaxes(title_text=STEP_AXIS)
    whole_steps(fig, history["step"].max() if len(history) else 10)
    fig.update_layout(legend=UNDER)
    note_empty(fig, history)
    return finish(fig, "Gradient norm per step", height=CURVES_HEIGHT)
