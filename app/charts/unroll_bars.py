"""Bar figures for the Unroll page at one step t: the states h_t (and c_t) over the units, what a
bidirectional layer hands on ([h→ ; h←]), and the gates.

Each figure shows one recorded sample at step t, on a y range fixed over the sample (or the gate's
own range), so the bars move on one scale as t moves. The diagram lives in unroll.py, the figures
over the whole sample (heatmap, one unit, coloured text, the CSV) in unroll_time.py.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.charts.gates import NAMES, TANH
from app.charts.refill import frame_of, refilled
from app.charts.sites import ARROWS, label, trace_of, whose
from app.charts.style import BLUE, GREEN, GREY, VERMILLION, finish
from app.charts.unroll import DIRECTION_COLOURS, checked_t, read_step, stack_name
from engine import Recording
from engine.describe import Read


def state_rows(trace) -> list[tuple[int, str, torch.Tensor]]:
    """(layer, "h_t" or "c_t", values [layers, dirs, T, H]) for each row of state_at's panels."""
    parts = [("h_t", trace.hidden)] + ([("c_t", trace.cell)] if trace.cell is not None else [])
    return [(layer, name, values) for layer in range(trace.hidden.shape[0]) for name, values in parts]


def state_at(rec: Recording, stack: str | None, t: int) -> go.Figure:
    """h_t at step t as bars over the units, one panel per layer and direction, and for an LSTM
    c_t in a panel below each. Each quantity's y range is its largest |value| over every step of
    the sample, so the bars move on a fixed scale as t moves."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    directions = trace.hidden.shape[1]
    frame = frame_of(rec, ("state_at", stack), lambda: state_frame(rec, stack))
    ys = [values[layer, d, t].numpy() for layer, _, values in state_rows(trace) for d in range(directions)]
    return refilled(frame, state_title(rec, stack, t), ys)


def state_title(rec: Recording, stack: str | None, t: int) -> str:
    what = "h_t and c_t" if trace_of(rec, stack).cell is not None else "h_t"
    return f"{what} at t = {t}, every unit ({whose(stack)}{rec.arch.upper()})"


def state_frame(rec: Recording, stack: str | None) -> go.Figure:
    """state_at's panels, axes and scales, at t = 0."""
    trace = trace_of(rec, stack)
    _, directions, _, H = trace.hidden.shape
    rows = state_rows(trace)
    fig = make_subplots(rows=len(rows), cols=directions, shared_xaxes=True, vertical_spacing=0.3 / len(rows),
                        subplot_titles=[f"{name}, {label(layer, d)}" for layer, name, _ in rows
                                        for d in range(directions)])
    units = np.arange(H)
    for row, (layer, name, values) in enumerate(rows, start=1):
        reach = float(values.abs().max()) or 1.0
        for d in range(directions):
            fig.add_trace(go.Bar(
                x=units, y=values[layer, d, 0].numpy(), name=f"{name}, {label(layer, d)}", showlegend=False,
                marker_color=GREEN if name == "c_t" else DIRECTION_COLOURS[d],
                hovertemplate=f"{name}, {label(layer, d)}<br>unit %{{x}}<br>%{{y:.4g}}<extra></extra>",
            ), row=row, col=d + 1)
            fig.update_yaxes(range=[-1.05 * reach, 1.05 * reach], nticks=5, row=row, col=d + 1)
        fig.update_yaxes(title_text=name, row=row, col=1)
    fig.update_xaxes(title_text="unit", row=len(rows))
    fig.update_annotations(font=dict(size=12), xanchor="left")
    for note, d in zip(fig.layout.annotations, [d for _ in rows for d in range(directions)]):
        note.x = fig.get_subplot(1, d + 1).xaxis.domain[0]  # each panel's title at its left
    fig = finish(fig, state_title(rec, stack, 0), height=90 + 150 * len(rows))
    return fig.update_layout(bargap=0.1)


def concatenation_at(rec: Recording, stack: str | None, layer: int, t: int, reads: Sequence[Read] = ()
                     ) -> go.Figure:
    """What the next layer (or the output) reads at step t from a bidirectional layer: the
    forward state h→_t, which has read x_0..x_t, and beside it the backward state h←_t, which
    has read x_{T−1}..x_t, as one vector of 2H values. Where the output reads fixed steps of the
    last layer (`reads`, the head's reads in model.describe(): a seq2vec head reads h→ at the
    last step and h← at step 0, each having read the whole sample), those, whatever t."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    layers, directions, T, H = trace.hidden.shape
    if directions != 2:
        raise ValueError("only a bidirectional layer has two directions to put side by side")
    if not 0 <= layer < layers:
        raise ValueError(f"layer must be 0..{layers - 1}, got {layer}")
    fixed = {r.direction: read_step(r, t, T) for r in reads
             if r.stack == stack_name(rec, stack) and r.layer == layer == layers - 1 and r.t is not None}
    at = [fixed.get(d, t) for d in (0, 1)]  # the step each direction's state is taken at
    reach = float(trace.hidden[layer].abs().max()) or 1.0
    fig = go.Figure()
    for d, read in ((0, f"read x_0..x_{at[0]}"), (1, f"read x_{T - 1}..x_{at[1]}")):
        fig.add_trace(go.Bar(
            x=np.arange(H) + d * H, y=trace.hidden[layer, d, at[d]].numpy(), marker_color=DIRECTION_COLOURS[d],
            name=f"h{ARROWS[d]}_{at[d]} ({read})", customdata=np.arange(H),
            hovertemplate=f"h{ARROWS[d]}_{at[d]} unit %{{customdata}}<br>position %{{x}}<br>%{{y:.4g}}<extra></extra>",
        ))
    fig.add_vline(x=H - 0.5, line=dict(color=GREY, dash="dash", width=1))
    fig.update_xaxes(title_text=f"position in [h→ ; h←] (0..{H - 1} forward, {H}..{2 * H - 1} backward)")
    fig.update_yaxes(title_text="value", range=[-1.05 * reach, 1.05 * reach])
    nxt = f"layer {layer + 1}" if layer + 1 < layers else "the output"
    when = "" if fixed else f" at t = {t}"
    fig = finish(fig, f"What {nxt} reads{when}: [h→_{at[0]} ; h←_{at[1]}] of layer {layer}")
    return fig.update_layout(bargap=0.1, legend=dict(orientation="h", x=0, y=-0.3, yanchor="top"),
                             margin=dict(b=90))


def gates_at(rec: Recording, stack: str | None, layer: int, direction: int, t: int) -> go.Figure:
    """Every gate of one layer and direction at step t, as bars over the units: 0..1 for a sigmoid
    gate, −1..1 for a tanh candidate."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    if not trace.gates:
        raise ValueError("a vanilla RNN has no gates: record an LSTM or a GRU to see them")
    frame = frame_of(rec, ("gates_at", stack), lambda: gates_frame(rec, stack))
    ys = [values[layer, direction, t].numpy() for values in trace.gates.values()]  # each [H]
    return refilled(frame, f"Gates at t = {t}, {whose(stack)}{label(layer, direction)}", ys)


def gates_frame(rec: Recording, stack: str | None) -> go.Figure:
    """gates_at's panels and ranges (the same for every layer, direction and step)."""
    trace = trace_of(rec, stack)
    H = trace.hidden.shape[3]
    names = list(trace.gates)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.25 / len(names),
                        subplot_titles=[NAMES[n] for n in names])
    for row, name in enumerate(names, start=1):
        fig.add_trace(go.Bar(x=np.arange(H), y=np.zeros(H), marker_color=VERMILLION if name in TANH else BLUE,
                             name=NAMES[name], showlegend=False,
                             hovertemplate=f"{NAMES[name]}<br>unit %{{x}}<br>%{{y:.4g}}<extra></extra>"),
                      row=row, col=1)
        fig.update_yaxes(range=[-1.05, 1.05] if name in TANH else [0, 1.05], nticks=3, row=row, col=1)
    fig.update_xaxes(title_text="unit", row=len(names), col=1)
    fig.update_yaxes(title_text="value", title_standoff=2)
    fig.update_annotations(font=dict(size=12), xanchor="left", x=0)
    fig = finish(fig, "Gates", height=70 + 120 * len(names))
    return fig.update_layout(bargap=0.1)
