"""Figures for the Unroll page over the whole sample, step t marked: the hidden units as a heatmap
(padding greyed out), one unit's h_t beside a feature of the input, the sample's text coloured by a
unit, and the table of every state (the page's CSV).

The diagram lives in unroll.py, the bars at step t in unroll_bars.py. Hidden states, which can be
negative, are drawn on a diverging scale centred on 0, positive red.
"""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.charts.gates import DIVERGING, MAX_TICKS
from app.charts.labels import T_AXIS, visible
from app.charts.refill import frame_of, refilled
from app.charts.sites import label, trace_of, whose
from app.charts.style import BLACK, BLUE, HEIGHT, ORANGE, VERMILLION, finish
from app.charts.unroll import checked_t
from engine import Recording, StackTrace


def pad_steps(trace: StackTrace, symbols: list[str] | None, pad_symbol: str | None) -> np.ndarray | None:
    """[T] bool, True at a step that is padding (no data: the recurrent layers carry the state
    through it), or None when the sample has none. The recording's own pad mask where it has
    one, else the steps whose symbol is the task's pad symbol."""
    mask = getattr(trace, "pad_mask", None)
    if mask is not None:
        pads = mask.numpy().astype(bool)  # [T]
    elif symbols is not None and pad_symbol is not None:
        pads = np.array([s == pad_symbol for s in symbols], dtype=bool)  # [T]
    else:
        return None
    return pads if pads.any() else None


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The (first, last) steps of each run of True in a [T] mask."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(int), [0]])))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def hidden_heatmap(rec: Recording, stack: str | None, layer: int, t: int, tokens: list[str] | None = None,
                   pads: np.ndarray | None = None) -> go.Figure:
    """h_t of every unit over time for one layer, the directions side by side, with step t framed.
    `pads` ([T] bool, pad_steps) greys the padding steps out and labels them: the state only
    passes through them. The maps are drawn once per recording and layer; a step moves the frames."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    layers, directions, T, _ = trace.hidden.shape
    if not 0 <= layer < layers:
        raise ValueError(f"layer must be 0..{layers - 1}, got {layer}")
    if pads is not None and len(pads) != T:
        raise ValueError(f"pads must mark each of the {T} steps, got {len(pads)}")
    key = ("heatmap", stack, layer, None if tokens is None else tuple(tokens), None if pads is None else pads.tobytes())
    frame = frame_of(rec, key, lambda: heatmap_frame(rec, stack, layer, tokens, pads))
    shapes = len(frame["layout"]["shapes"])
    framed = {k: dict(x0=t - 0.5, x1=t + 0.5) for k in range(shapes - directions, shapes)}  # drawn last
    return refilled(frame, heatmap_title(stack, layer, t), shapes=framed)


def heatmap_title(stack: str | None, layer: int, t: int) -> str:
    return f"Hidden units over time, {whose(stack)}layer {layer}: step t = {t} framed"


def heatmap_frame(rec: Recording, stack: str | None, layer: int, tokens: list[str] | None,
                  pads: np.ndarray | None) -> go.Figure:
    """hidden_heatmap at t = 0, its step frames the last shapes, one a direction."""
    trace = trace_of(rec, stack)
    _, directions, T, H = trace.hidden.shape
    shown = None if tokens is None else [visible(tok) for tok in tokens]
    real = slice(None) if pads is None else torch.from_numpy(~pads)
    reach = float(trace.hidden[layer][:, real].abs().max()) if pads is None or (~pads).any() else 0.0
    reach = reach or 1.0
    fig = make_subplots(rows=1, cols=directions, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[label(layer, d) + (" (reads right to left)" if d else "")
                                        for d in range(directions)] if directions > 1 else None)
    for d in range(directions):
        z = trace.hidden[layer, d].numpy().T  # [H, T]
        token = "" if shown is None else "<br>token %{customdata}"
        fig.add_trace(go.Heatmap(
            z=z, x=np.arange(T), y=np.arange(H), colorscale=DIVERGING, reversescale=True, zmin=-reach, zmax=reach,
            zmid=0, showscale=d == directions - 1, colorbar=dict(thickness=10, title=dict(text="h_t", side="right")),
            customdata=None if shown is None else np.tile(np.array(shown, dtype=object), (H, 1)),
            hovertemplate=f"{label(layer, d)}<br>t %{{x}}{token}<br>unit %{{y}}<br>h %{{z:.4g}}<extra></extra>",
        ), row=1, col=d + 1)
        for first, last in runs(pads) if pads is not None else ():
            fig.add_shape(type="rect", x0=first - 0.5, x1=last + 0.5, y0=-0.5, y1=H - 0.5, name="padding",
                          fillcolor="rgba(190, 190, 190, 0.85)", line=dict(width=0), layer="above", row=1, col=d + 1)
            fig.add_annotation(x=(first + last) / 2, y=(H - 1) / 2, text="padding" if last - first >= 2 else "pad",
                               showarrow=False, textangle=-90 if last - first < 6 else 0,
                               font=dict(size=12, color="#444444"), row=1, col=d + 1)
        fig.update_xaxes(title_text=T_AXIS, row=1, col=d + 1)
        if shown is not None and T <= MAX_TICKS:
            ticks = shown if pads is None else ["" if pad else tok for tok, pad in zip(shown, pads)]  # greyed: said
            fig.update_xaxes(tickmode="array", tickvals=list(range(T)), ticktext=ticks, tickangle=0,
                             tickfont=dict(size=11 if T <= 30 else 8), row=1, col=d + 1)
    for d in range(directions):  # the step's frames, last: hidden_heatmap moves them
        fig.add_shape(type="rect", x0=-0.5, x1=0.5, y0=-0.5, y1=H - 0.5, line=dict(color=BLACK, width=2.5),
                      row=1, col=d + 1)
    fig.update_yaxes(title_text="unit", col=1)
    fig = finish(fig, heatmap_title(stack, layer, 0), height=max(HEIGHT, 120 + 4 * H))
    if pads is not None:
        fig.update_layout(title_subtitle=dict(
            text=f"grey: {int(pads.sum())} padding steps, which the network passes its state through unchanged",
            font=dict(size=12)), margin=dict(t=75))
    return fig


def unit_over_time(rec: Recording, stack: str | None, layer: int, direction: int, unit: int, t: int,
                   feature: tuple[str, np.ndarray] | None = None) -> go.Figure:
    """One unit's h_t over time (left axis), optionally beside a feature of the input (right
    axis), with step t marked: for inputs that are values rather than text. Drawn once per
    recording, unit and feature; a step moves the mark."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    H = trace.hidden.shape[3]
    if not 0 <= unit < H:
        raise ValueError(f"unit must be 0..{H - 1}, got {unit}")
    key = ("unit_over_time", stack, layer, direction, unit, None if feature is None else feature[0])
    frame = frame_of(rec, key, lambda: unit_frame(rec, stack, layer, direction, unit, feature))
    title = f"Unit {unit} of {whose(stack)}{label(layer, direction)} over time; t = {t} marked"
    return refilled(frame, title, shapes={0: dict(x0=t, x1=t)})  # the mark is its only shape


def unit_frame(rec: Recording, stack: str | None, layer: int, direction: int, unit: int,
               feature: tuple[str, np.ndarray] | None) -> go.Figure:
    """unit_over_time with t = 0 marked."""
    h = trace_of(rec, stack).hidden[layer, direction, :, unit].numpy()  # [T]
    steps = np.arange(len(h))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=steps, y=h, name=f"h_t of unit {unit}", line=dict(color=BLUE, width=2.2),
                             hovertemplate=f"unit {unit}<br>t %{{x}}<br>h %{{y:.4g}}<extra></extra>"),
                  secondary_y=False)
    if feature is not None:
        name, values = feature
        fig.add_trace(go.Scatter(x=steps, y=values, name=name, line=dict(color=ORANGE, width=1.6, dash="dot"),
                                 hovertemplate=f"{name}<br>t %{{x}}<br>%{{y:.4g}}<extra></extra>"), secondary_y=True)
        fig.update_yaxes(title_text=name, showgrid=False, tickmode="auto", secondary_y=True)
    fig.add_vline(x=0, line=dict(color=VERMILLION, width=2))
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=f"h_t of unit {unit}", secondary_y=False)
    fig = finish(fig, "")
    return fig.update_layout(legend=dict(orientation="h", x=0, y=-0.25, yanchor="top"), margin=dict(b=80))


def states_table(rec: Recording, stack: str | None = None) -> pd.DataFrame:
    """h_t (and c_t) of every layer, direction, step and unit: columns layer, direction, t, unit,
    h (and c). What the Unroll page's CSV holds."""
    frame = rec.to_frame("hidden", stack).rename(columns={"value": "h"})
    if trace_of(rec, stack).cell is not None:
        frame["c"] = rec.to_frame("cell", stack)["value"].to_numpy()
    return frame


def coloured_tokens(tokens: list[str], values: np.ndarray, t: int, spaced: bool = False,
                    pads: np.ndarray | None = None) -> str:
    """The sample's text as HTML, each token's background coloured by `values` (one per token:
    red positive, blue negative, white 0, on the scale of the largest |value| of a real step),
    step t framed; hovering a token gives its step and exact value. `spaced` puts a space between
    tokens (words, symbols); characters of a text are not spaced. `pads` ([T] bool) greys the
    padding steps out, their hover saying so."""
    if len(tokens) != len(values):
        raise ValueError(f"one value per token: {len(tokens)} tokens, {len(values)} values")
    pads = np.zeros(len(tokens), dtype=bool) if pads is None else pads
    real = np.abs(values)[~pads]
    reach = (float(real.max()) if len(real) else 0.0) or 1.0
    spans = []
    for step, (token, value) in enumerate(zip(tokens, values)):
        strength = min(1.0, abs(float(value)) / reach)
        rgb = (214, 39, 40) if value > 0 else (31, 119, 180)
        style = f"background: rgba({rgb[0]}, {rgb[1]}, {rgb[2]}, {strength:.2f}); padding: 1px 0;"
        title = f"t = {step}: {value:.4g}"
        if pads[step]:
            style = "background: #E6E6E6; color: #8C8C8C; padding: 1px 0;"
            title += " (padding: the state passes through unchanged)"
        if step == t:
            style += " outline: 2px solid #000; font-weight: bold;"
        shown = html.escape(visible(token) if token.isspace() and token != " " else token).replace(" ", "&nbsp;")
        spans.append(f'<span title="{title}" style="{style}">{shown}</span>')
        if token == "\n":
            spans.append("<br>")
        elif spaced:
            spans.append(" ")
    return ('<div style="font-family: monospace; font-size: 15px; line-height: 1.9; '
            'word-wrap: break-word;">' + "".join(spans) + "</div>")
