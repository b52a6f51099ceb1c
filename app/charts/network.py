"""The network as built: a diagram of its parts and a table of their sizes. No streamlit here."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go

from app.charts.style import BLACK, GREEN, GREY, ORANGE, PURPLE, SKY_BLUE, finish


class Part(NamedTuple):
    """One entry of model.param_groups(), as a table row and as boxes in the diagram."""

    name: str
    shape: str  # "in → out", e.g. "vocab 158 → 16", "16 → 2 × 64" (bidirectional), "128 → 4"
    parameters: int
    names: list[str]  # its parameters' names
    units: int  # a recurrent layer's H (per direction); the head's outputs; an embedding's width


def parts(model) -> list[Part]:
    named = dict(model.named_parameters())
    found = []
    for part, names in model.param_groups().items():
        count = sum(named[n].numel() for n in names)
        if part.endswith("embedding") or part == "head":
            rows, cols = named[f"{part}.weight"].shape  # embedding [V, E]; head [out, in]
            shape, units = (f"{cols} → {rows}", rows) if part == "head" else (f"vocab {rows} → {cols}", cols)
        else:
            size_in = named[next(n for n in names if "weight_ih" in n)].shape[1]  # [gates*H, in]
            units = named[next(n for n in names if "weight_hh" in n)].shape[1]  # [gates*H, H]
            both = any(n.endswith("_reverse") for n in names)
            shape = f"{size_in} → 2 × {units}" if both else f"{size_in} → {units}"
        found.append(Part(part, shape, count, names, units))
    return found


def layer_table(model) -> pd.DataFrame:
    """One row per part of model.param_groups(): part, shape ("in → out"), parameters."""
    return pd.DataFrame([p[:3] for p in parts(model)], columns=["part", "shape", "parameters"])


class Box(NamedTuple):
    name: str  # the shape's name, e.g. "layer 0 backward"
    text: str  # what the box says
    colour: str
    hover: str


def arch_name(cfg) -> str:
    if cfg.arch == "rnn":
        return f"RNN ({cfg.activation})"
    return ("peephole " if cfg.peephole else "") + cfg.arch.upper()


def part_boxes(part: Part, model, layer_colour: str) -> list[Box]:
    """The boxes of one part: two for a bidirectional layer (forward →, ← backward), else one;
    hovering one lists its parameter tensors, their shapes and counts."""
    named = dict(model.named_parameters())

    def box(name: str, title: str, size: str, colour: str, names: list[str]) -> Box:
        count = sum(named[n].numel() for n in names)
        lines = [f"{n} {list(named[n].shape)}: {named[n].numel():,}" for n in names]
        hover = "<br>".join([f"<b>{title}</b>", *lines, f"total {count:,} parameters"])
        return Box(name, f"<b>{title}</b><br>{size} · {count:,} params", colour, hover)

    label = part.name.removeprefix("encoder ").removeprefix("decoder ").replace("_", " ")
    if part.name == "head":
        where = "last step" if model.spec.mapping == "seq2vec" else "every step"
        plural = "s" if part.units > 1 else ""
        out = f"{part.units} value{plural}" if model.spec.loss == "mse" else f"{part.units} classes"
        return [box(part.name, f"head · linear, {where}", f"→ {out}", ORANGE, part.names)]
    if part.name.endswith("embedding"):
        return [box(part.name, label, part.shape, PURPLE, part.names)]
    size = f"{part.units} units"
    backward = [n for n in part.names if n.endswith("_reverse")]
    if not backward:
        return [box(part.name, f"{label} · {arch_name(model.cfg)}", size, layer_colour, part.names)]
    forward = [n for n in part.names if n not in backward]
    return [box(f"{part.name} forward", f"{label} · forward →", size, layer_colour, forward),
            box(f"{part.name} backward", f"{label} · ← backward", size, layer_colour, backward)]


def input_box(name: str, title: str, spec, tokens: int | None = None) -> Box:
    if tokens is not None:
        what = f"tokens: vocab {tokens}"
    elif spec.mapping == "vec2seq":
        what = f"x: {spec.input_size} values, fed at every step"
    else:
        what = f"x_t: {spec.input_size} value{'s' if spec.input_size > 1 else ''} per step"
    return Box(name, f"<b>{title}</b><br>{what}", GREY, f"<b>{title}</b><br>{what}<br>no parameters")


def stack_rows(model, prefix: str, layer_colour: str = SKY_BLUE) -> list[list[Box]]:
    """Rows of boxes, bottom to top, for the parts whose names start with prefix."""
    return [part_boxes(p, model, layer_colour) for p in parts(model) if p.name.startswith(prefix)]


ROW_PX, BOX_H, GAP = 62, 0.64, 0.03  # px per row; box height and gap between two boxes, in rows / x units


def draw_rows(fig: go.Figure, rows: list[list[Box]], centre: float, width: float, hovers: list) -> list[list]:
    """Draw rows bottom to top in a column [centre ± width/2], with arrows from each row to the
    next (straight up where two boxes overlap). Returns each row's (x0, x1, y0, y1) rectangles."""
    drawn = []
    for r, row in enumerate(rows):
        each = width * 0.6 if len(row) == 1 else (width - GAP * (len(row) - 1)) / len(row)
        left = centre - (each * len(row) + GAP * (len(row) - 1)) / 2
        rects = []
        for i, box in enumerate(row):
            x0, y0 = left + i * (each + GAP), r + (1 - BOX_H) / 2
            rect = (x0, x0 + each, y0, y0 + BOX_H)
            fill = "rgba({},{},{},0.16)".format(*(int(box.colour[k:k + 2], 16) for k in (1, 3, 5)))
            fig.add_shape(type="rect", x0=rect[0], x1=rect[1], y0=rect[2], y1=rect[3], name=box.name,
                          line=dict(color=box.colour, width=1.5), fillcolor=fill, layer="below")
            fig.add_annotation(x=x0 + each / 2, y=r + 0.5, text=box.text, showarrow=False, font=dict(size=11))
            hovers.append((x0 + each / 2, r + 0.5, box.hover))
            for below in drawn[-1] if drawn else []:
                arrow(fig, below, rect)
            rects.append(rect)
        drawn.append(rects)
    return drawn


def arrow(fig: go.Figure, below: tuple, above: tuple, margin: float = 0.02) -> None:
    """An arrow from the top of `below` to the bottom of `above`: vertical through the middle
    of their horizontal overlap, or between their nearest corners when they do not overlap."""
    low, high = max(below[0], above[0]) + margin, min(below[1], above[1]) - margin
    if low <= high:
        tail = tip = (low + high) / 2
    elif below[1] < above[0]:
        tail, tip = below[1] - margin, above[0] + margin
    else:
        tail, tip = below[0] + margin, above[1] - margin
    fig.add_annotation(x=tip, y=above[2], ax=tail, ay=below[3], xref="x", yref="y", axref="x", ayref="y",
                       text="", showarrow=True, arrowhead=2, arrowwidth=1.3, arrowcolor=GREY)


def network_diagram(model) -> go.Figure:
    """The network as built, bottom (input) to top (head): one box per part of
    model.param_groups(), two side by side for a bidirectional layer, each with its size and
    parameter count; hovering a box lists its parameter tensors and their shapes. An
    encoder-decoder (spec.mapping "encdec") is drawn as two stacks, encoder left and decoder
    right, joined by "context (final state)" arrows, layer by layer. Height: 62 px per row."""
    spec, cfg = model.spec, model.cfg
    fig, hovers = go.Figure(), []
    total = sum(p.numel() for p in model.parameters())
    if spec.mapping == "encdec":
        encoder = [[input_box("source", "source", spec, spec.input_size)], *stack_rows(model, "source"),
                   *stack_rows(model, "encoder")]
        decoder = [[input_box("target", "previous output token", spec, spec.output_size)],
                   *stack_rows(model, "target"), *stack_rows(model, "decoder", GREEN), *stack_rows(model, "head")]
        left = draw_rows(fig, encoder, 0.26, 0.44, hovers)
        right = draw_rows(fig, decoder, 0.74, 0.44, hovers)
        tail, tip = left[-1][-1][1], right[len(left) - 1][0][0]
        for r in range(2, len(encoder)):  # encoder layer k's final state starts decoder layer k
            fig.add_annotation(x=tip, y=r + 0.5, ax=tail, ay=r + 0.5, xref="x", yref="y", axref="x", ayref="y",
                               text="", showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor=BLACK)
        fig.add_annotation(x=(tail + tip) / 2, y=len(encoder) - 0.5 + BOX_H / 2, yanchor="bottom",
                           showarrow=False, text="context<br>(final state)", font=dict(size=11))
        edges = (min(r[0] for row in left for r in row) - 0.02, max(r[1] for row in right for r in row) + 0.02)
        for x, caption in zip(edges, ("encoder", "decoder"), strict=True):
            fig.add_annotation(x=x, y=len(decoder) / 2, text=f"<b>{caption}</b>", textangle=-90, showarrow=False,
                               font=dict(size=12, color=GREY))
        rows, kind = len(decoder), " encoder-decoder"
    else:
        tokens = spec.input_size if spec.input_kind == "tokens" else None
        stack = [[input_box("input", "input", spec, tokens)], *stack_rows(model, "")]
        draw_rows(fig, stack, 0.5, 0.8, hovers)
        rows, kind = len(stack), ""
    x, y, text = zip(*hovers, strict=True)
    fig.add_trace(go.Scatter(x=x, y=y, hovertext=text, hoverinfo="text", mode="markers", name="parts",
                             showlegend=False, marker=dict(size=40, opacity=0)))  # invisible, for hover
    fig.update_xaxes(visible=False, range=[0, 1], fixedrange=True)
    fig.update_yaxes(visible=False, range=[0, rows], fixedrange=True)
    direction = ", bidirectional" + (" encoder" if kind else "") if cfg.bidirectional else ""
    layers = f"{cfg.num_layers} layer{'s' if cfg.num_layers > 1 else ''} × {cfg.hidden_size} units"
    title = f"{arch_name(cfg)}{kind}, {layers}{direction} — {total:,} parameters"
    fig = finish(fig, title, height=ROW_PX * rows + 60)
    fig.update_layout(margin=dict(l=10, r=10, t=45, b=5), hovermode="closest",
                      hoverlabel=dict(bgcolor="white", bordercolor=GREY, font=dict(color=BLACK)),
                      modebar=dict(remove=["zoom", "pan", "select", "lasso", "zoomIn", "zoomOut", "autoScale",
                                           "resetScale"]))  # nothing to zoom: keep the download button
    return fig
