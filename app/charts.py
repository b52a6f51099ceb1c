"""Pure figure builders: plain data (a training history, a model) in, a plotly Figure out.

No streamlit here, so every figure can be tested and exported. Every figure has a title, axis
titles with units, Okabe-Ito colours (distinguishable with every common colour-vision
deficiency), hover text with the exact values, a compact height and the "plotly_white" template.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

# Okabe & Ito (2008), "Color Universal Design"
ORANGE, SKY_BLUE, GREEN, BLUE, VERMILLION, PURPLE, BLACK = (
    "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000"
)
GREY = "#777777"
HEIGHT = 300  # px
MAX_POINTS = 2000
EMPTY = "No training steps yet —<br>press Step or Play"
STEP_AXIS = "training step (one batch each)"
COLUMNS = ["step", "loss", "metric", "grad_norm", "grad_norm_clipped", "diverged"]
LOSS_UNITS = {"accuracy": "cross-entropy, nats", "R²": "MSE"}  # the loss that goes with each metric


def finish(fig: go.Figure, title: str, height: int = HEIGHT) -> go.Figure:
    """The look every figure shares: title at the top left, plotly_white, `height` px, and
    automatic ticks as 3e-11 rather than SI prefixes (3p reads as picometres, not a gradient)."""
    title = dict(text=title, x=0.01, xanchor="left", font=dict(size=15))
    fig.update_xaxes(exponentformat="e")
    fig.update_yaxes(exponentformat="e")
    return fig.update_layout(title=title, template="plotly_white", height=height, margin=dict(l=65, r=20, t=50, b=45))


def steps_of(history: pd.DataFrame) -> pd.DataFrame:
    """The history with its columns even when it has no rows (a fresh Trainer's frame has none)."""
    return history if len(history) else pd.DataFrame(columns=COLUMNS, dtype=float)


def thin(history: pd.DataFrame, max_points: int = MAX_POINTS) -> pd.DataFrame:
    """At most max_points rows, evenly spaced, always including the first and the last."""
    if len(history) <= max_points:
        return history
    rows = np.unique(np.linspace(0, len(history) - 1, max_points).round().astype(int))
    return history.iloc[rows]


def axis(values) -> dict:
    """y axis settings for a loss-like series: log when every finite value is > 0, ranged over
    the finite values with 5% padding; on a log axis, ticks at 1-2-5 written out in full."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    log = len(v) > 0 and bool((v > 0).all())
    if log:
        v = np.log10(v)
    if not len(v):
        return dict(type="linear", range=[0.0, 1.0])
    pad = 0.05 * (v.max() - v.min()) or (0.1 if log else 0.1 * max(abs(v.max()), 1.0))
    low = v.min() - pad if log or v.min() < 0 else max(v.min() - pad, 0.0)
    settings = dict(type="log" if log else "linear", range=[low, v.max() + pad])
    if log:
        decades = range(int(np.floor(low)), int(np.ceil(v.max() + pad)) + 1)
        ticks = [m * 10.0**k for k in decades for m in (1, 2, 5) if low <= np.log10(m) + k <= v.max() + pad]
        if len(ticks) > 8:  # every decade, or every n-th one: at most 7 ticks
            ticks = [10.0**k for k in decades[:: -(-len(decades) // 7)]]
        if len(ticks) >= 3:
            settings.update(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return settings


def top_of(settings: dict) -> float:
    """The data value at the top of an axis range (a log axis's range is in log10 units)."""
    return 10 ** settings["range"][1] if settings["type"] == "log" else settings["range"][1]


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


def note_empty(fig: go.Figure, history: pd.DataFrame) -> None:
    """Before the first step: the hint, over empty axes from step 0 to 10."""
    if not len(history):
        fig.add_annotation(text=EMPTY, xref="x domain", yref="y domain", x=0.5, y=0.8, showarrow=False,
                           font=dict(size=13, color=GREY), bgcolor="white")
        fig.update_xaxes(range=[0, 10])


def training_curves(history: pd.DataFrame, metric_name: str, baseline_loss: float | None = None) -> go.Figure:
    """Loss (left; log y when every loss > 0) and the task's metric (right) against the step.

    history        Trainer.history_frame(): step, loss, metric, diverged (one row per step)
    metric_name    "accuracy" (axis fixed to 0..1), "R²" (axis from at most -1 to 1) or another
    baseline_loss  a dashed "baseline" line on the loss panel, e.g. the MSE of predicting the mean

    More than 2000 steps are drawn as 2000 evenly spaced ones, always including the first and
    the last (the title then says so). The loss axis covers the steps that did not diverge (and
    the baseline); a diverged step is a red X at its top, its hover giving the loss.
    """
    history = steps_of(history)
    shown = thin(history)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.16)  # room for the right axis title
    fine = history[~history["diverged"].astype(bool)]
    loss_axis = axis([*fine["loss"], *([] if baseline_loss is None else [baseline_loss])])
    fig.add_trace(line(shown["step"], shown["loss"], "loss", BLUE, "loss"), row=1, col=1)
    fig.add_trace(line(shown["step"], shown["metric"], metric_name, GREEN, metric_name), row=1, col=2)
    if baseline_loss is not None:
        add_level(fig, baseline_loss, history, "baseline", loss_axis, row=1, col=1)
    add_diverged(fig, history, top_of(loss_axis), "loss", "loss", row=1, col=1)
    units = LOSS_UNITS.get(metric_name, "per batch")
    log = ", log scale" if loss_axis["type"] == "log" else ""
    fig.update_yaxes(title_text=f"loss ({units}{log})", **loss_axis, row=1, col=1)
    metric_title, metric_span = metric_name, None
    if metric_name == "accuracy":
        metric_title, metric_span = "accuracy (fraction correct)", [0, 1.02]
    elif metric_name == "R²":
        metrics = np.asarray(history["metric"], dtype=float)
        lowest = np.nanmin(metrics) if np.isfinite(metrics).any() else 0.0
        metric_title = "R² (1 = perfect, 0 = mean)" if lowest >= -1 else "R² (axis cut at −1)"
        metric_span = [max(min(lowest, 0.0), -1.0) - 0.02, 1.02]
    fig.update_yaxes(title_text=metric_title, range=metric_span, row=1, col=2)
    fig.update_xaxes(title_text=STEP_AXIS)
    fig.update_layout(showlegend=False)
    note_empty(fig, history)
    drawn = f" ({len(history):,} steps, {len(shown):,} drawn)" if len(shown) < len(history) else ""
    return finish(fig, f"Training: loss and {metric_name} per step{drawn}")


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
    fig.update_layout(legend=dict(orientation="h", x=1, xanchor="right", y=1.02, yanchor="bottom"))
    note_empty(fig, history)
    return finish(fig, "Gradient norm per step")


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
