"""The network as built: a diagram of its parts and a table of their sizes, drawn from the model's
own description of itself (model.describe(), in forward order), so every class build_model can
return is drawn, and no parameter name is parsed here. No streamlit here."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pandas as pd
import plotly.graph_objects as go

from app.charts.style import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY_BLUE, finish
from engine.describe import Part

KIND_COLOURS = {"embedding": PURPLE, "positional encoding": PURPLE, "recurrent": SKY_BLUE, "attention": BLUE,
                "transformer block": SKY_BLUE, "linear": GREY, "linear head": ORANGE, "pointer": ORANGE}
DIRECTIONS = (("forward", "forward →"), ("backward", "← backward"))  # box name, box text


def size_in(part: Part) -> int | str:
    return part.input_shape[-1]


def shape_text(part: Part, model) -> str:
    """What a part maps, per step: "vocab 158 → 16", "16 → 2 × 64" (bidirectional), "128 → 4"."""
    if part.kind == "embedding" and part.input_shape[-1] in ("T", "S"):  # token ids in: [V, E] table
        vocab = dict(model.named_parameters())[part.params[0]].shape[0]
        return f"vocab {vocab} → {part.output_shape[-1]}"
    if part.kind == "recurrent" and part.directions == 2:
        return f"{size_in(part)} → 2 × {part.hidden_size}"
    return f"{size_in(part)} → {part.output_shape[-1]}"


def drawn_parts(model) -> list[Part]:
    """The parts with something to draw: all but the bare input (the diagram draws its own)."""
    return [p for p in model.describe() if p.kind != "input"]


def layer_table(model) -> pd.DataFrame:
    """One row per part with parameters (the parts a Trainer can freeze): part, shape, parameters."""
    rows = [(p.name, shape_text(p, model), p.parameters) for p in model.describe() if p.parameters]
    return pd.DataFrame(rows, columns=["part", "shape", "parameters"])


class Box(NamedTuple):
    name: str  # the shape's name, e.g. "layer 0 backward"
    text: str  # what the box says
    colour: str
    hover: str


def arch_name(cfg) -> str:
    if cfg.arch == "transformer":
        return "Transformer"
    cell = f"RNN ({cfg.activation})" if cfg.arch == "rnn" else ("peephole " if cfg.peephole else "") + cfg.arch.upper()
    zoneout = f", zoneout {cfg.zoneout:g}" if cfg.zoneout else ""
    return ("layer-normalised " if cfg.layer_norm else "") + cell + zoneout


def subscripted(label: str) -> str:
    """"h←_0" as h←<sub>0</sub>."""
    symbol, _, step = label.partition("_")
    return f"{symbol}<sub>{step}</sub>" if step else symbol


def part_title(part: Part, model) -> str:
    label = part.name.removeprefix("encoder ").removeprefix("decoder ").replace("_", " ")
    if part.kind == "recurrent":
        return f"{label} · {arch_name(model.cfg)}"
    if part.kind == "linear head":
        where = "every step" if part.input_shape[0] in ("T", "S") else "last step"
        reads = " ; ".join(subscripted(r.label) for r in part.reads)
        return f"head · linear, {where}" + (f" · reads [{reads}]" if len(part.reads) > 1 else "")
    if part.kind == "attention":
        return f"attention · {part.score.replace('_', ' ')} score"
    if part.kind == "pointer":  # the head: its attention weights are the output
        return f"pointer · {part.score.replace('_', ' ')} score over the inputs"
    if part.kind == "transformer block":
        return f"{label} · block, {part.heads} head{'s' * (part.heads > 1)}"
    if part.kind == "positional encoding":
        return "positions · sinusoid added"
    if part.kind == "linear":
        return f"{label} · [h_t ; context]"
    return label


def part_size(part: Part, model) -> str:
    if part.kind == "recurrent":
        return f"{part.hidden_size} units"
    if part.kind == "linear head":
        outputs = part.output_shape[-1]
        return f"→ {outputs} value{'s' * (outputs > 1)}" if model.spec.loss == "mse" else f"→ {outputs} classes"
    if part.kind == "pointer":
        return "→ p(end marker, each input position)"
    return shape_text(part, model)


def part_boxes(part: Part, model) -> list[Box]:
    """The boxes of one part: two for a bidirectional recurrent layer (forward →, ← backward, each
    with one direction's parameters), else one; hovering one lists the part's parameter tensors,
    their shapes and counts."""
    named = dict(model.named_parameters())
    lines = [f"{n} {list(named[n].shape)}: {named[n].numel():,}" for n in part.params]
    colour = GREEN if part.stack == "decoder" and part.kind == "recurrent" else KIND_COLOURS[part.kind]
    title, size = part_title(part, model), part_size(part, model)
    directions = part.directions if part.kind == "recurrent" else 1
    count = part.parameters // directions  # both directions of a layer have the same shapes
    hover = "<br>".join([f"<b>{title}</b>", *lines, f"total {part.parameters:,} parameters"])
    if directions == 1:
        return [Box(part.name, f"<b>{title}</b><br>{size} · {count:,} params", colour, hover)]
    label = title.split(" · ")[0]
    return [Box(f"{part.name} {name}", f"<b>{label} · {text}</b><br>{size} · {count:,} params", colour, hover)
            for name, text in DIRECTIONS]


def input_box(name: str, title: str, spec, tokens: int | None = None) -> Box:
    if tokens is not None:
        what = f"tokens: vocab {tokens}"
    elif spec.mapping == "vec2seq":
        what = f"x: {spec.input_size} values, fed at every step"
    else:
        what = f"x_t: {spec.input_size} value{'s' if spec.input_size > 1 else ''} per step"
    return Box(name, f"<b>{title}</b><br>{what}", GREY, f"<b>{title}</b><br>{what}<br>no parameters")


def on_source_side(part: Part) -> bool:
    """An encoder-decoder's left column: the source's embedding and positions, and the encoder."""
    return part.stack == "encoder" or part.name.startswith("source") or part.name == "positions"


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


def across(fig: go.Figure, x0: float, x1: float, y0: float, y1: float) -> None:
    """A black arrow from the encoder's side (x0, y0) to the decoder's (x1, y1)."""
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                       showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor=BLACK)


def join_stacks(fig: go.Figure, model, source: list[Part], target: list[Part], left: list, right: list) -> None:
    """What the decoder takes from the encoder: a recurrent encoder's final state starts the
    decoder layer by layer (without attention); attention reads every encoder state; a
    transformer's decoder blocks read the last encoder block's output (cross-attention)."""
    top = left[-1][-1]
    y_top = (top[2] + top[3]) / 2
    readers = [i for i, p in enumerate(target) if p.kind in ("attention", "pointer", "transformer block")]
    if readers:
        for i in readers:
            rect = right[i + 1][0]  # row 0 is the decoder's input box
            across(fig, top[1], rect[0], y_top, (rect[2] + rect[3]) / 2)
        what = "memory: every encoder output" if model.cfg.arch == "transformer" else "every encoder state h_s"
        y_text = y_top
    else:
        layers = [i for i, p in enumerate(source) if p.kind == "recurrent"]
        starts = [i for i, p in enumerate(target) if p.kind == "recurrent"]
        for s, t in zip(layers, starts, strict=False):  # encoder layer k's final state starts decoder layer k
            a, b = left[s + 1][-1], right[t + 1][0]
            across(fig, a[1], b[0], (a[2] + a[3]) / 2, (b[2] + b[3]) / 2)
        what, y_text = "context (final state)", top[3]
    x_text = (top[1] + min(r[0][0] for r in right[1:])) / 2
    fig.add_annotation(x=x_text, y=y_text, yanchor="bottom", showarrow=False, text=what.replace(": ", ":<br>"),
                       font=dict(size=11), bgcolor="rgba(255,255,255,0.8)")


def network_diagram(model) -> go.Figure:
    """The network as built, bottom (input) to top (head), from model.describe(): one box per
    part, two side by side for a bidirectional recurrent layer, each with its size and parameter
    count; hovering a box lists its parameter tensors and their shapes. An encoder-decoder is
    drawn as two stacks, encoder left and decoder right, with what the decoder takes from the
    encoder. Height: 62 px per row."""
    spec, cfg = model.spec, model.cfg
    fig, hovers = go.Figure(), []
    total = sum(p.numel() for p in model.parameters())
    parts = drawn_parts(model)
    tokens = spec.input_size if spec.input_kind == "tokens" else None
    if spec.mapping == "encdec":
        source = [p for p in parts if on_source_side(p)]
        target = [p for p in parts if not on_source_side(p)]
        positions = [p for p in source if p.kind == "positional encoding"]
        if positions:  # one table of positions, added to the target's embeddings too
            target.insert(1, dataclasses.replace(positions[0], name="positions (target)"))
        left = draw_rows(fig, [[input_box("source", "source", spec, spec.input_size)],
                               *[part_boxes(p, model) for p in source]], 0.26, 0.44, hovers)
        right = draw_rows(fig, [[input_box("target", "previous output token", spec, spec.output_size)],
                                *[part_boxes(p, model) for p in target]], 0.74, 0.44, hovers)
        join_stacks(fig, model, source, target, left, right)
        edges = (min(r[0] for row in left for r in row) - 0.02, max(r[1] for row in right for r in row) + 0.02)
        rows = max(len(left), len(right))
        for x, caption in zip(edges, ("encoder", "decoder"), strict=True):
            fig.add_annotation(x=x, y=rows / 2, text=f"<b>{caption}</b>", textangle=-90, showarrow=False,
                               font=dict(size=12, color=GREY))
        kind = " encoder-decoder"
    else:
        stack = [[input_box("input", "input", spec, tokens)], *[part_boxes(p, model) for p in parts]]
        draw_rows(fig, stack, 0.5, 0.8, hovers)
        rows, kind = len(stack), ""
    x, y, text = zip(*hovers, strict=True)
    fig.add_trace(go.Scatter(x=x, y=y, hovertext=text, hoverinfo="text", mode="markers", name="parts",
                             showlegend=False, marker=dict(size=40, opacity=0)))  # invisible, for hover
    fig.update_xaxes(visible=False, range=[0, 1], fixedrange=True)
    fig.update_yaxes(visible=False, range=[0, rows], fixedrange=True)
    direction = ", bidirectional" + (" encoder" if kind else "") if cfg.bidirectional else ""
    width = f"d_model {cfg.hidden_size}" if cfg.arch == "transformer" else f"{cfg.hidden_size} units"
    layers = f"{cfg.num_layers} layer{'s' if cfg.num_layers > 1 else ''} × {width}"
    attention = f", {cfg.attention.replace('_', ' ')} attention" if cfg.attention and cfg.arch != "transformer" else ""
    title = f"{arch_name(cfg)}{kind}, {layers}{direction}{attention} — {total:,} parameters"
    fig = finish(fig, title, height=ROW_PX * rows + 60)
    fig.update_layout(margin=dict(l=10, r=10, t=45, b=5), hovermode="closest",
                      hoverlabel=dict(bgcolor="white", bordercolor=GREY, font=dict(color=BLACK)),
                      modebar=dict(remove=["zoom", "pan", "select", "lasso", "zoomIn", "zoomOut", "autoScale",
                                           "resetScale"]))  # nothing to zoom: keep the download button
    return fig
