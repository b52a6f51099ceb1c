"""The Unroll page's diagram: the network unrolled over the steps around t, a Recording and a time
step t in, a plotly Figure out; and what it shares with the page's other figures (the step check,
the direction colours, the states a model's head reads).

Moving t only rebuilds the figure from the same recording. The same look as every figure
(style.py). The bars at step t live in unroll_bars.py, the figures over the whole sample
(heatmap, one unit, coloured text, the CSV) in unroll_time.py.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

import plotly.graph_objects as go

from app.charts.labels import T_AXIS
from app.charts.refill import unchecked
from app.charts.sites import ARROWS, trace_of
from app.charts.style import BLUE, GREEN, GREY, ORANGE, VERMILLION, finish
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
    """The states the model's head reads, from its own description (model.describe()); with
    attention the head reads them through W_c, which combines s_t with the context c_t, so the
    states are the ones the parts before the head name."""
    direct = tuple(read for part in parts if part.role == "head" for read in part.reads)
    return direct or tuple(read for part in parts for read in part.reads)


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
    rows = ["input x_t", *[f"layer {layer}" for layer in range(layers)], "output ŷ_t"]
    xaxis = dict(tickmode="array", tickvals=list(steps), ticktext=[f"t = {x}" for x in steps], side="bottom",
                 range=[steps[0] - 0.75, steps[-1] + 0.75], showgrid=False, zeroline=False, title=dict(text=T_AXIS))
    yaxis = dict(tickmode="array", tickvals=list(range(top + 1)), ticktext=rows, range=[-0.5, top + 0.5],
                 showgrid=False, zeroline=False)
    # Unchecked: a new step is a new diagram, and checking its hundred boxes and arrows was most of
    # its 15 ms; the tests check every kind of box and arrow it draws against plotly's schema.
    fig = unchecked({"data": [], "layout": dict(shapes=sketch.shapes, annotations=sketch.notes, xaxis=xaxis,
                                                yaxis=yaxis)})
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
