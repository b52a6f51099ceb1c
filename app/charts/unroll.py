"""Figure builders for the Unroll page: a Recording and a time step t in, a plotly Figure out.

Each figure shows the network at step t of one recorded sample; moving t only rebuilds these
figures from the same recording. The same look as every figure (style.py); hidden states, which can be
negative, are drawn on a diverging scale centred on 0, positive red.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.charts.gates import DIVERGING, MAX_TICKS, NAMES, TANH
from app.charts.labels import T_AXIS, visible
from app.charts.sites import ARROWS, label, trace_of, whose
from app.charts.style import BLACK, BLUE, GREEN, GREY, HEIGHT, ORANGE, VERMILLION, finish
from engine import Recording, StackTrace
from engine.describe import Part, Read

WINDOW = 9  # time steps the unrolled diagram draws around t, when there are more than ALL
ALL = 12  # sequences up to this long are drawn whole
DIRECTION_COLOURS = (BLUE, ORANGE)  # forward, backward
BOX_W, BOX_H = 0.72, 0.56  # a cell's box, in data units (one unit between steps and between rows)


def checked_t(trace: StackTrace, t: int) -> int:
    T = trace.hidden.shape[2]
    if not 0 <= t < T:
        raise ValueError(f"t must be 0..{T - 1} (this sample has {T} steps), got {t}")
    return t


def window(T: int, t: int, width: int = WINDOW) -> range:
    """Every step of a short sequence; of a longer one `width` consecutive steps containing t,
    centred on it where the sequence allows."""
    if T <= ALL:
        return range(T)
    start = min(max(0, t - width // 2), max(0, T - width))
    return range(start, min(T, start + width))


@dataclass
class Sketch:
    """The diagram's boxes and arrows, gathered and handed to plotly in one call at the end:
    adding each one to the figure separately validated the whole layout every time (0.2 s a draw)."""

    shapes: list[dict] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)  # plotly annotations: texts and arrows


def arrow(sketch: Sketch, x0: float, y0: float, x1: float, y1: float, colour: str, dash: bool = False) -> None:
    """An arrow from (x0, y0) to (x1, y1) in data coordinates."""
    sketch.notes.append(dict(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                             showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.6 if not dash else 1.2,
                             arrowcolor=colour, opacity=0.9))


def box(sketch: Sketch, x: float, y: float, text: str, current: bool, fill: str = "white") -> None:
    sketch.shapes.append(dict(
        type="rect", x0=x - BOX_W / 2, x1=x + BOX_W / 2, y0=y - BOX_H / 2, y1=y + BOX_H / 2, xref="x", yref="y",
        line=dict(color=VERMILLION if current else GREY, width=3 if current else 1.2), fillcolor=fill, layer="below",
    ))
    sketch.notes.append(dict(x=x, y=y, xref="x", yref="y", text=text, showarrow=False,
                             font=dict(size=12, color="#222222")))


def stack_name(rec: Recording, stack: str | None) -> str:
    """The recording's name of the stack shown (None: its first)."""
    return stack if stack is not None else next(iter(rec.stacks))


def head_reads(parts: Sequence[Part]) -> tuple[Read, ...]:
    """The states the model's head reads, from its own description (model.describe())."""
    return tuple(read for part in parts if part.role == "head" for read in part.reads)


def read_step(read: Read, x: int, T: int) -> int:
    """The step whose state `read` takes for the output at step x: the first, the last, or x."""
    return x if read.t is None else read.t % T


def read_label(read: Read, step: int) -> str:
    """A read as plotly text with its step, e.g. "h←<sub>0</sub>"."""
    arrow = "" if read.direction is None else ARROWS[read.direction]
    return f"{read.symbol}{arrow}<sub>{step}</sub>"


def reads_text(reads: Sequence[Read], x: int, T: int) -> str:
    """What the output at step x reads, e.g. "[h→<sub>50</sub> ; h←<sub>0</sub>]"."""
    names = [read_label(r, read_step(r, x, T)) for r in reads]
    return names[0] if len(names) == 1 else "[" + " ; ".join(names) + "]"


def unrolled_diagram(rec: Recording, stack: str | None, t: int, inputs: list[str], outputs: list[str],
                     reads: Sequence[Read], width: int = WINDOW) -> go.Figure:
    """The network unrolled over the steps around t: the input x_t at the bottom, one row of
    cells per layer (a bidirectional cell split into h→ and h←), the output at the top. Arrows:
    x_t up into the cell, h_{t−1} → h_t along a row (blue forward, orange backward, leftwards),
    for an LSTM c_t beside h_t (green), each layer's h_t up into the next, and into each output
    ŷ an arrow from every state the head reads (`reads`, the head's reads in model.describe()):
    a bidirectional seq2vec model's ŷ reads h→ at the last step and h← at step 0, which has read
    the sample from its end back to its start. Step t is framed in vermillion.

    inputs, outputs   one label per step as plotly text (step_labels), "" where there is no output
    """
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    layers, directions, T, _ = trace.hidden.shape
    if len(inputs) != T or len(outputs) != T:
        raise ValueError(f"inputs and outputs need one label per step: {T}, got {len(inputs)} and {len(outputs)}")
    reads = [r for r in reads if r.stack == stack_name(rec, stack)]
    if any(outputs) and not reads:
        raise ValueError(f"the outputs need the states the head reads; none of {stack_name(rec, stack)!r}")
    steps = window(T, t, width)
    lstm = trace.cell is not None
    sketch = Sketch()
    top = layers + 1  # rows: 0 the input, 1..layers the cells, top the output
    for x in steps:
        current = x == t
        box(sketch, x, 0, f"x<sub>{x}</sub><br>{short(inputs[x], 12)}", current, fill="#F2F2F2")
        arrow(sketch, x, BOX_H / 2, x, 1 - BOX_H / 2, GREY)
        for layer in range(layers):
            y = 1 + layer
            names = ([f"h{ARROWS[d]}<sub>{x}</sub>" for d in range(directions)] if directions > 1
                     else [f"h<sub>{x}</sub>"])
            # one name a line: side by side, "h→ | h←" overflowed its box at 1024 px wide
            box(sketch, x, y, "<br>".join(names) + (f"<br>c<sub>{x}</sub>" if lstm else ""), current)
            if layer < layers - 1:
                arrow(sketch, x, y + BOX_H / 2, x, y + 1 - BOX_H / 2, GREY)
            for d in range(directions):
                if x + 1 in steps or (x + 1 < T and x == steps[-1]):
                    along(sketch, x, y, d, lstm, cut=x + 1 not in steps)
            if steps[0] > 0 and x == steps[0]:
                along(sketch, x - 1, y, 0, lstm, cut=True, entering=True)
                if directions > 1:
                    along(sketch, x - 1, y, 1, lstm, cut=True, entering=True)
        if outputs[x]:
            box(sketch, x, top, f"ŷ<sub>{x}</sub><br>{answer_text(outputs[x])}", current, fill="#F2F2F2")
    for x in (x for x in range(T) if outputs[x]):
        for read in reads:
            into_output(sketch, read, read_step(read, x, T), x, top, directions, steps)
    answered = [i for i, o in enumerate(outputs) if o]
    if not any(outputs[x] for x in steps):
        later = any(outputs) and f"no output at these steps: it answers at t = {max(answered)}"
        sketch.notes.append(dict(x=(steps[0] + steps[-1]) / 2, y=top, xref="x", yref="y", showarrow=False,
                                 font=dict(size=12, color=GREY),
                                 text=later or "no output: its last state is where the next stack starts"))
    fig = go.Figure(layout=dict(shapes=sketch.shapes, annotations=sketch.notes))
    rows = ["input x_t", *[f"layer {layer}" for layer in range(layers)], "output ŷ_t"]
    fig.update_xaxes(tickmode="array", tickvals=list(steps), ticktext=[f"t = {x}" for x in steps], side="bottom",
                     range=[steps[0] - 0.75, steps[-1] + 0.75], showgrid=False, zeroline=False, title_text=T_AXIS)
    fig.update_yaxes(tickmode="array", tickvals=list(range(top + 1)), ticktext=rows, range=[-0.5, top + 0.5],
                     showgrid=False, zeroline=False)
    key = " · blue →: h forward" + (" · orange ←: h backward" if directions > 1 else "") + (
        " · green: c_t" if lstm else "")
    if answered and any(r.t is not None for r in reads):  # one answer, read from fixed steps
        key += f" · ŷ<sub>{answered[-1]}</sub> reads {reads_text(reads, answered[-1], T)}"
    elif answered and len(reads) > 1:
        key += f" · ŷ<sub>t</sub> reads {reads_text(reads, t, T).replace(f'<sub>{t}</sub>', '<sub>t</sub>')}"
    shown = f"steps {steps[0]}–{steps[-1]} of 0–{T - 1}" if len(steps) < T else f"all {T} steps"
    whole = f"The {stack}'s network" if stack else "The network"
    fig = finish(fig, f"{whole} unrolled through time ({rec.arch.upper()}, {shown})",
                 height=140 + 110 * (top + 1))
    fig.update_layout(title_subtitle=dict(text=f"step t = {t} framed{key}", font=dict(size=12)))
    return fig.update_layout(margin=dict(t=75, l=90))


def short(text: str, limit: int) -> str:
    """At most `limit` characters of a label, an ellipsis saying where it was cut; an escaped
    character (&lt;) is never cut in half."""
    shown = html.unescape(text)
    cut = shown if len(shown) <= limit else shown[: limit - 1] + "…"
    return html.escape(cut, quote=False)


def answer_text(label: str) -> str:
    """An output's label fitted to its box: a class on one line, its probability on the next."""
    name, _, rest = label.partition(" (")
    return short(name, 10) + (f"<br>({rest}" if rest else "")


def into_output(sketch: Sketch, read: Read, source: int, x: int, top: int, directions: int, steps: range
                ) -> None:
    """An arrow from the box of the state `read` (at step `source`, of its layer and direction)
    up into the output ŷ_x. Where one end lies outside the drawn steps, the arrow runs to the
    window's edge and says where it comes from or goes to."""
    half = 0.0 if directions == 1 or read.direction is None else (-1, 1)[read.direction] * BOX_W / 4
    colour = GREY if read.direction is None or directions == 1 else DIRECTION_COLOURS[read.direction]
    x0, y0 = source + half, 1 + read.layer + BOX_H / 2
    x1, y1 = x + half / 2, top - BOX_H / 2
    name = f"reads {read.label}"  # which of the head's reads an arrow draws: the tests find it so
    if source in steps and x in steps:
        arrow(sketch, x0, y0, x1, y1, colour)
        sketch.notes[-1]["name"] = name
        return
    edge = steps[0] - 0.6 if min(source, x) < steps[0] else steps[-1] + 0.6
    middle = (y0 + y1) / 2
    if x in steps:  # the state read lies outside: the arrow comes in from the edge
        arrow(sketch, edge, middle, x1, y1, colour)
        sketch.notes[-1]["name"] = name
        text, anchor_x = f"from {read_label(read, source)}", edge
    elif source in steps:  # the output lies outside: the arrow leaves toward it
        arrow(sketch, x0, y0, edge, middle, colour)
        sketch.notes[-1]["name"] = name
        text, anchor_x = f"to ŷ<sub>{x}</sub>", edge
    else:
        return
    sketch.notes.append(dict(x=anchor_x, y=middle, xref="x", yref="y", showarrow=False, yshift=10,
                             xanchor="left" if edge < steps[0] else "right", text=text,
                             font=dict(size=13, color=colour)))


def along(sketch: Sketch, x: int, y: float, direction: int, lstm: bool, cut: bool, entering: bool = False) -> None:
    """The recurrent arrows between step x and x + 1 of one row: h (and c) forward to the right,
    or backward to the left. A `cut` arrow leaves or enters the drawn window (the steps go on)."""
    left, right = x + BOX_W / 2, x + 1 - BOX_W / 2
    if entering:
        left = x + 1 - 0.72
    elif cut:
        right = x + 0.72
    h_y = y + (0.08 if direction == 0 else -0.08)
    colour = DIRECTION_COLOURS[direction]
    start, end = (left, right) if direction == 0 else (right, left)
    arrow(sketch, start, h_y, end, h_y, colour)
    if lstm:
        c_y = y + (0.19 if direction == 0 else -0.19)
        arrow(sketch, start, c_y, end, c_y, GREEN, dash=True)


def state_at(rec: Recording, stack: str | None, t: int) -> go.Figure:
    """h_t at step t as bars over the units, one panel per layer and direction, and for an LSTM
    c_t in a panel below each. Each quantity's y range is its largest |value| over every step of
    the sample, so the bars move on a fixed scale as t moves."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    layers, directions, _, H = trace.hidden.shape
    parts = [("h_t", trace.hidden)] + ([("c_t", trace.cell)] if trace.cell is not None else [])
    rows = [(layer, name, values) for layer in range(layers) for name, values in parts]
    fig = make_subplots(rows=len(rows), cols=directions, shared_xaxes=True, vertical_spacing=0.3 / len(rows),
                        subplot_titles=[f"{name}, {label(layer, d)}" for layer, name, _ in rows
                                        for d in range(directions)])
    units = np.arange(H)
    for row, (layer, name, values) in enumerate(rows, start=1):
        reach = float(values.abs().max()) or 1.0
        for d in range(directions):
            fig.add_trace(go.Bar(
                x=units, y=values[layer, d, t].numpy(), name=f"{name}, {label(layer, d)}", showlegend=False,
                marker_color=GREEN if name == "c_t" else DIRECTION_COLOURS[d],
                hovertemplate=f"{name}, {label(layer, d)}<br>unit %{{x}}<br>%{{y:.4g}}<extra></extra>",
            ), row=row, col=d + 1)
            fig.update_yaxes(range=[-1.05 * reach, 1.05 * reach], nticks=5, row=row, col=d + 1)
        fig.update_yaxes(title_text=name, row=row, col=1)
    fig.update_xaxes(title_text="unit", row=len(rows))
    fig.update_annotations(font=dict(size=12), xanchor="left")
    for note, d in zip(fig.layout.annotations, [d for _ in rows for d in range(directions)]):
        note.x = fig.get_subplot(1, d + 1).xaxis.domain[0]  # each panel's title at its left
    what = "h_t and c_t" if trace.cell is not None else "h_t"
    fig = finish(fig, f"{what} at t = {t}, every unit ({whose(stack)}{rec.arch.upper()})",
                 height=90 + 150 * len(rows))
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
    H = trace.hidden.shape[3]
    names = list(trace.gates)
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, vertical_spacing=0.25 / len(names),
                        subplot_titles=[NAMES[n] for n in names])
    for row, name in enumerate(names, start=1):
        values = trace.gates[name][layer, direction, t].numpy()  # [H]
        fig.add_trace(go.Bar(x=np.arange(H), y=values, marker_color=VERMILLION if name in TANH else BLUE,
                             name=NAMES[name], showlegend=False,
                             hovertemplate=f"{NAMES[name]}<br>unit %{{x}}<br>%{{y:.4g}}<extra></extra>"),
                      row=row, col=1)
        fig.update_yaxes(range=[-1.05, 1.05] if name in TANH else [0, 1.05], nticks=3, row=row, col=1)
    fig.update_xaxes(title_text="unit", row=len(names), col=1)
    fig.update_yaxes(title_text="value", title_standoff=2)
    fig.update_annotations(font=dict(size=12), xanchor="left", x=0)
    fig = finish(fig, f"Gates at t = {t}, {whose(stack)}{label(layer, direction)}", height=70 + 120 * len(names))
    return fig.update_layout(bargap=0.1)


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
    passes through them."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    layers, directions, T, H = trace.hidden.shape
    if not 0 <= layer < layers:
        raise ValueError(f"layer must be 0..{layers - 1}, got {layer}")
    if pads is not None and len(pads) != T:
        raise ValueError(f"pads must mark each of the {T} steps, got {len(pads)}")
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
        fig.add_shape(type="rect", x0=t - 0.5, x1=t + 0.5, y0=-0.5, y1=H - 0.5, line=dict(color=BLACK, width=2.5),
                      row=1, col=d + 1)
        fig.update_xaxes(title_text=T_AXIS, row=1, col=d + 1)
        if shown is not None and T <= MAX_TICKS:
            ticks = shown if pads is None else ["" if pad else tok for tok, pad in zip(shown, pads)]  # greyed: said
            fig.update_xaxes(tickmode="array", tickvals=list(range(T)), ticktext=ticks, tickangle=0,
                             tickfont=dict(size=11 if T <= 30 else 8), row=1, col=d + 1)
    fig.update_yaxes(title_text="unit", col=1)
    fig = finish(fig, f"Hidden units over time, {whose(stack)}layer {layer}: step t = {t} framed",
                 height=max(HEIGHT, 120 + 4 * H))
    if pads is not None:
        fig.update_layout(title_subtitle=dict(
            text=f"grey: {int(pads.sum())} padding steps, which the network passes its state through unchanged",
            font=dict(size=12)), margin=dict(t=75))
    return fig


def unit_over_time(rec: Recording, stack: str | None, layer: int, direction: int, unit: int, t: int,
                   feature: tuple[str, np.ndarray] | None = None) -> go.Figure:
    """One unit's h_t over time (left axis), optionally beside a feature of the input (right
    axis), with step t marked: for inputs that are values rather than text."""
    trace = trace_of(rec, stack)
    t = checked_t(trace, t)
    H = trace.hidden.shape[3]
    if not 0 <= unit < H:
        raise ValueError(f"unit must be 0..{H - 1}, got {unit}")
    h = trace.hidden[layer, direction, :, unit].numpy()  # [T]
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
    fig.add_vline(x=t, line=dict(color=VERMILLION, width=2))
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(title_text=f"h_t of unit {unit}", secondary_y=False)
    fig = finish(fig, f"Unit {unit} of {whose(stack)}{label(layer, direction)} over time; t = {t} marked")
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
