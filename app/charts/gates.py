"""Figure builders for the Gates page: a Recording in, a plotly Figure (or a DataFrame) out.

The same look as every figure (style.py). Sigmoid gates
(LSTM i, f, o; GRU r, z) live in 0..1 and are drawn on a sequential, colour-blind-safe scale;
the tanh candidates (LSTM g, GRU n) and the cell state c_t can be negative and are drawn on a
diverging scale centred on 0, positive red.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.charts.labels import T_AXIS, visible
from app.charts.refill import as_dict, frame_of, refilled
from app.charts.sites import label, trace_of, whose
from app.charts.style import (
    BLUE,
    GREEN,
    GREY,
    HEIGHT,
    LEGEND_ROW,
    NARROWEST_PLOT,
    ORANGE,
    UNDER_AXIS,
    VERMILLION,
    finish,
    legend_below,
)
from engine import Recording, StackTrace

NAMES = {
    "i": "i: input gate", "f": "f: forget gate", "g": "g: candidate", "o": "o: output gate",
    "r": "r: reset gate", "z": "z: update gate", "n": "n: candidate state", "c": "c_t: cell state",
}
TANH = ("g", "n")  # the candidates; every other gate is a sigmoid
SEQUENTIAL, DIVERGING = "Viridis", "RdBu"  # RdBu reversed: positive red, negative blue
PANEL_PX = 170  # px per heatmap panel
MAX_TICKS = 60  # steps labelled with their tokens, up to this many steps
TOKEN_TICKS = 25  # of those, at most this many ticks (every k-th step)
TICK_CHAR_PX = 0.55 * 12  # px a character of a 12 px tick label takes, about, in Source Sans
SHARE_COLOURS = {"near 0": BLUE, "in between": "#DDDDDD", "near 1": ORANGE, "near ±1": VERMILLION}



def gated(rec: Recording, stack: str | None, layer: int = 0, direction: int = 0) -> StackTrace:
    """The stack asked for, checked to have gates and that layer and direction."""
    trace = trace_of(rec, stack)
    if not trace.gates:
        raise ValueError("a vanilla RNN has no gates: record an LSTM or a GRU to see them")
    layers, directions = trace.hidden.shape[:2]
    if not (0 <= layer < layers and 0 <= direction < directions):
        raise ValueError(f"layer must be 0..{layers - 1} and direction 0..{directions - 1} "
                         f"(0 forward, 1 backward), got layer {layer}, direction {direction}")
    return trace


def lstm_only(rec: Recording, stack: str | None, layer: int, direction: int) -> StackTrace:
    trace = gated(rec, stack, layer, direction)
    if trace.cell is None:
        raise ValueError(f"the constant error carousel needs a cell state c_t, which only an LSTM has; "
                         f"this is a {rec.arch.upper()}")
    return trace


def gate_heatmaps(rec: Recording, stack: str | None = None, layer: int = 0, direction: int = 0,
                  tokens: list[str] | None = None, frames_with: object | None = None) -> go.Figure:
    """One heatmap per gate (units up, time steps across), and for an LSTM a last one of c_t,
    on a shared time axis. Each panel has its own small colourbar: 0..1 for a sigmoid gate, −1..1
    for a tanh candidate, ±max|c_t| for the cell state.

    tokens   one label per step (e.g. the characters read): the ticks when T <= 60 (every k-th past
             TOKEN_TICKS), and every one in the hover
    frames_with  what the laid-out panels are kept with (a lab's probes: one per model): laid out
                 once for the model and choices, and each recording's values put in (a playing
                 page redraws this on every tick); None lays them out every time
    """
    panels = gate_panels(rec, stack, layer, direction)
    T, H = next(iter(panels.values())).shape
    if tokens is not None and len(tokens) != T:
        raise ValueError(f"tokens must give one label per step: {T} of them, got {len(tokens)}")
    words = None if tokens is None else tuple(tokens)
    key = ("gate_heatmaps", rec.arch, T, H, tuple(panels), stack, layer, direction, words)
    frame = laid_out(frames_with, key, lambda: gate_heatmaps_frame(rec, stack, layer, direction, tokens))
    values = {k: dict(z=v.numpy().T) for k, v in enumerate(panels.values())}  # each [H, T]
    if "c" in panels:
        values[len(panels) - 1].update(cell_scale(values[len(panels) - 1]["z"]))
    return refilled(frame, traces=values)


def laid_out(source: object | None, key: tuple, build) -> dict:
    """The frame build() lays out, kept with `source` (refill.frame_of), or made now without one."""
    return as_dict(build()) if source is None else frame_of(source, key, build)


def gate_panels(rec: Recording, stack: str | None, layer: int, direction: int) -> dict[str, torch.Tensor]:
    """Each gate of one layer and direction, and an LSTM's c_t: name -> [T, H]."""
    trace = gated(rec, stack, layer, direction)
    panels = {name: values[layer, direction] for name, values in trace.gates.items()}  # each [T, H]
    if trace.cell is not None:
        panels["c"] = trace.cell[layer, direction]  # [T, H]
    return panels


def cell_scale(z: np.ndarray) -> dict:
    """The c_t panel's colour range and colourbar ticks: ±max|c_t|, symmetric about 0."""
    reach = float(np.abs(z).max()) or 1.0
    return dict(zmin=-reach, zmax=reach,
                colorbar=dict(tickvals=[-reach, 0, reach], ticktext=[f"{-reach:.3g}", "0", f"{reach:.3g}"]))


def gate_heatmaps_frame(rec: Recording, stack: str | None, layer: int, direction: int,
                        tokens: list[str] | None) -> go.Figure:
    """gate_heatmaps built in full, checked, for this recording."""
    panels = gate_panels(rec, stack, layer, direction)
    T, H = next(iter(panels.values())).shape
    shown = None if tokens is None else [visible(tok) for tok in tokens]
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.32 / len(panels),
                        subplot_titles=[NAMES[name] for name in panels])
    for row, (name, values) in enumerate(panels.items(), start=1):
        z = values.numpy().T  # [H, T]: one row per unit
        ticks = dict(nticks=3)
        if name in TANH:
            scale = dict(colorscale=DIVERGING, reversescale=True, zmin=-1, zmax=1, zmid=0)
        elif name == "c":
            cell = cell_scale(z)
            scale = dict(colorscale=DIVERGING, reversescale=True, zmin=cell["zmin"], zmax=cell["zmax"], zmid=0)
            ticks = cell["colorbar"]
        else:
            scale = dict(colorscale=SEQUENTIAL, zmin=0, zmax=1)
        low, high = fig.get_subplot(row, 1).yaxis.domain
        colourbar = dict(len=high - low, y=(low + high) / 2, yanchor="middle", thickness=10, x=1.01,
                         tickfont=dict(size=10), outlinewidth=0, **ticks)
        token = "" if shown is None else "<br>token %{customdata}"
        fig.add_trace(go.Heatmap(
            z=z, x=np.arange(T), y=np.arange(H), name=NAMES[name], colorbar=colourbar, **scale,
            customdata=None if shown is None else np.tile(np.array(shown, dtype=object), (H, 1)),
            hovertemplate=f"{NAMES[name]}<br>t %{{x}}{token}<br>unit %{{y}}<br>value %{{z:.4g}}<extra></extra>",
        ), row=row, col=1)
        fig.update_yaxes(title_text="unit", title_standoff=4, row=row, col=1)
    if shown is not None and T <= MAX_TICKS:  # at most TOKEN_TICKS at 11 px: 50 at 9 px were a smear at 1024 px
        every = math.ceil(T / TOKEN_TICKS)
        fig.update_xaxes(tickmode="array", tickvals=list(range(0, T, every)), ticktext=shown[::every], tickangle=0,
                         tickfont=dict(size=11))
    fig.update_xaxes(title_text=T_AXIS, row=len(panels), col=1)
    fig.update_annotations(font=dict(size=12), xanchor="left", x=0)  # the panel titles, at the left
    reading = " (reads right to left)" if direction == 1 else ""
    title = f"Gates of {whose(stack)}{label(layer, direction)}{reading} over time ({rec.arch.upper()})"
    fig = finish(fig, title, height=80 + PANEL_PX * len(panels))
    return fig.update_layout(margin=dict(r=70))


def saturation_table(rec: Recording, stack: str | None = None, low: float = 0.05, high: float = 0.95
                     ) -> pd.DataFrame:
    """The share of each gate's (t, unit) values near 0, in between and near 1, per layer and
    direction: one row each, the three shares summing to 1.

    A sigmoid gate (i, f, o; r, z) counts value < low as near 0 and value > high as near 1. A tanh
    candidate (g, n) lives in −1..1 and saturates at both ends, so it counts |value|: |value| < low
    is near 0, |value| > high is "near 1", meaning near ±1 (its activation column says "tanh").
    """
    trace = gated(rec, stack)
    rows = []
    for name, values in trace.gates.items():
        tanh = name in TANH
        for layer, direction in np.ndindex(*values.shape[:2]):
            v = values[layer, direction].double().numpy()  # [T, H]
            v = np.abs(v) if tanh else v
            near_0, near_1 = float((v < low).mean()), float((v > high).mean())
            rows.append(dict(gate=name, activation="tanh" if tanh else "sigmoid", layer=layer,
                             direction=("forward", "backward")[direction], **{
                                 "near 0": near_0, "in between": 1.0 - near_0 - near_1, "near 1": near_1}))
    return pd.DataFrame(rows)


def bar_label(gate: str, tanh: bool, part: str | None) -> str:
    """A saturation bar's label: the gate's name on its own line, then what sets the bar apart
    (|·| for a tanh candidate; the layer and direction when there are several), one per line,
    so the labels stay narrow in half a page."""
    return "<br>".join([NAMES[gate], *(["(|·|, tanh)"] if tanh else []), *([part] if part else [])])


def saturation(rec: Recording, stack: str | None = None, low: float = 0.05, high: float = 0.95) -> go.Figure:
    """saturation_table as stacked horizontal bars, one per gate (and layer and direction when
    there are several), in the gate order, top to bottom; a tanh candidate's "near 1" is near ±1.
    The legend goes under the bars, and the left margin holds the longest line of a bar's label:
    in half a page at 1024 px the legend at the right took a third of the width, and plotly's
    automargin still cut "g: candidate (|·|, tanh)" at the edge."""
    table = saturation_table(rec, stack, low, high)
    trace = trace_of(rec, stack)
    several = int(np.prod(trace.hidden.shape[:2])) > 1
    tanh = (table["activation"] == "tanh").to_numpy()
    bars = [bar_label(g, t, label(ly, ("forward", "backward").index(d)) if several else None)
            for g, t, ly, d in zip(table["gate"], tanh, table["layer"], table["direction"], strict=True)]
    fig = go.Figure()
    for part, column, rows in (("near 0", "near 0", tanh | ~tanh), ("in between", "in between", tanh | ~tanh),
                               ("near 1", "near 1", ~tanh), ("near ±1", "near 1", tanh)):
        if rows.any():
            fig.add_trace(go.Bar(
                y=np.array(bars)[rows], x=table[column].to_numpy()[rows], name=part, orientation="h",
                marker=dict(color=SHARE_COLOURS[part], line=dict(color="white", width=0.5)),
                texttemplate="%{x:.0%}", textposition="inside", insidetextanchor="middle",
                hovertemplate=f"%{{y}}<br>{part}: %{{x:.1%}}<extra></extra>",
            ))
    candidates = ", ".join(name for name in trace.gates if name in TANH)  # g for an LSTM, n for a GRU
    rule = [f"near 0: < {low:g} · near 1: > {high:g}", f"tanh {candidates}: of |value|"]  # two lines: one was cut
    fig.update_xaxes(title_text="share of (t, unit) values" + "".join(f"<br><span style='font-size:11px'>{line}</span>"
                                                                      for line in rule),
                     range=[0, 1], tickformat=".0%", tickvals=[0, 0.5, 1],  # three: presentation's six turned on end
                     title_font=dict(size=12))
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=bars)
    fig.update_layout(barmode="stack", uniformtext=dict(minsize=9, mode="hide"), legend_traceorder="normal")
    title = "How saturated the gates are" + (f" ({stack})" if stack else "")
    lines_per_bar = max(bar.count("<br>") + 1 for bar in bars)
    # the axis title's two more lines (the rule) take 75 px more: at 45 the legend sat on them
    under_axis = UNDER_AXIS + 75
    # The bars' own px, then the margins: the title's 50 and, under the plot, the axis title and the
    # legend's first row (legend_below adds its other rows). A height of 110 px more than the bars
    # left an LSTM's four bars about 20 px once the legend took its rows: their labels lay on each other.
    bars_px = (12 + 14 * lines_per_bar) * len(bars)
    fig = finish(fig, title, height=max(HEIGHT, 50 + bars_px + under_axis + LEGEND_ROW + 5))
    longest_line = max(len(line) for bar in bars for line in bar.split("<br>"))
    left = int(TICK_CHAR_PX * longest_line) + 12
    fig.update_layout(margin=dict(l=left))
    # Its rows counted in the plot's width, which the labels' margin narrows: counted for 230 px, the
    # legend took 4 rows where 2 were planned, and plotly took the other two from the bars.
    return legend_below(fig, under_axis=under_axis, width=NARROWEST_PLOT + 65 - left)


def carousel_unit(rec: Recording, stack: str | None = None, layer: int = 0, direction: int = 0) -> int:
    """The unit whose forget gate f_t is highest on average over t: the one whose c_t is kept
    longest, so the most worth showing."""
    trace = lstm_only(rec, stack, layer, direction)
    return int(trace.gates["f"][layer, direction].double().mean(dim=0).argmax())  # over [H]


def constant_error_carousel(rec: Recording, stack: str | None = None, layer: int = 0, direction: int = 0,
                            unit: int | None = None, frames_with: object | None = None) -> go.Figure:
    """Over t: f_t and i_t on the left axis (0..1), c_t on the right. The mean over units, with
    mean |c_t| (a mean of signed c_t would cancel), or one unit's f_t, i_t and c_t. `frames_with`,
    as gate_heatmaps': laid out once for the model and choices, refilled after."""
    f, i, c = carousel_lines(rec, stack, layer, direction, unit)  # each [T]
    key = ("carousel", len(f), stack, layer, direction, unit)
    frame = laid_out(frames_with, key, lambda: carousel_frame(rec, stack, layer, direction, unit))
    scale = {"yaxis2": dict(range=[0, 1.1 * max(float(c.max()), 1e-9)])} if unit is None else None  # mean |c_t|'s
    return refilled(frame, ys=[f, i, c], axes=scale)


def carousel_lines(rec: Recording, stack: str | None, layer: int, direction: int, unit: int | None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """f_t, i_t and c_t of one unit, or the mean over units of f_t, i_t and |c_t|: each [T]."""
    trace = lstm_only(rec, stack, layer, direction)
    H = trace.hidden.shape[3]
    if unit is not None and not 0 <= unit < H:
        raise ValueError(f"unit must be 0..{H - 1}, got {unit}")
    f = trace.gates["f"][layer, direction].double().numpy()  # [T, H]
    i = trace.gates["i"][layer, direction].double().numpy()  # [T, H]
    c = trace.cell[layer, direction].double().numpy()  # [T, H]
    if unit is None:
        return f.mean(axis=1), i.mean(axis=1), np.abs(c).mean(axis=1)
    return f[:, unit], i[:, unit], c[:, unit]


def carousel_frame(rec: Recording, stack: str | None, layer: int, direction: int, unit: int | None) -> go.Figure:
    """constant_error_carousel built in full, checked, for this recording."""
    f, i, c = carousel_lines(rec, stack, layer, direction, unit)
    which, c_name = ("mean over units", "mean |c_t|") if unit is None else (f"unit {unit}", "c_t")
    t = np.arange(len(f))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for values, name, colour, width, right in ((f, "f_t forget gate", BLUE, 2.2, False),
                                               (i, "i_t input gate", ORANGE, 2.2, False),
                                               (c, f"{c_name} cell state", GREEN, 3.0, True)):
        fig.add_trace(go.Scatter(
            x=t, y=values, name=name, mode="lines+markers" if len(t) < 50 else "lines",
            line=dict(color=colour, width=width, dash="dot" if right else "solid"), marker=dict(size=5),
            hovertemplate=f"{name} ({which})<br>t %{{x}}<br>%{{y:.4g}}<extra></extra>",
        ), secondary_y=right)
    fig.add_hline(y=1, line=dict(color=GREY, dash="dash", width=1), secondary_y=False)
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=f"gate value ({which})", range=[-0.02, 1.05], secondary_y=False)
    c_range = [0, 1.1 * max(float(c.max()), 1e-9)] if unit is None else None
    fig.update_yaxes(title_text=f"{c_name} ({which})", range=c_range, showgrid=False, zeroline=unit is not None,
                     tickmode="auto", secondary_y=True)  # not "sync", plotly.js 3's default for an overlay
    fig = finish(fig, "The constant error carousel: f ≈ 1 keeps c_t, i_t writes into it", height=HEIGHT + 60)
    fig.update_layout(title_subtitle=dict(text=f"{whose(stack)}{label(layer, direction)}, {which}", font=dict(size=12)),
                      margin=dict(t=70, r=65))
    return legend_below(fig)  # at y = -0.22 of the plot, 'time step t' sat on the legend at 1024 px


def gates_table(rec: Recording, stack: str | None = None) -> pd.DataFrame:
    """Every gate value, and for an LSTM c_t as the gate "c": columns layer, direction, t, unit,
    value, gate. What the Gates page's CSV holds."""
    trace = gated(rec, stack)
    frame = rec.to_frame("gates", stack)
    if trace.cell is not None:
        frame = pd.concat([frame, rec.to_frame("cell", stack).assign(gate="c")], ignore_index=True)
    return frame
