"""Figures of the position signal a transformer adds to each token: the sinusoid of Vaswani et
al. (2017) from engine.positional_encoding, and a trained model's learned table beside it. No
streamlit here.

The course writes PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)),
and works one value out: at d = 512 the 22nd word's encoding has about -0.488 in dimension 100
and -0.873 in dimension 101. The heatmap marks that cell and states it.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from torch import Tensor

import engine
from app.charts.style import BLACK, BLUE, GREEN, GREY, HEIGHT, ORANGE, PURPLE, VERMILLION, finish, legend_below

DIVERGING = "RdBu"  # reversed: positive red, negative blue, 0 white
CURVE_COLOURS = (BLUE, ORANGE, GREEN, VERMILLION, PURPLE, BLACK)
COURSE_D, COURSE_POS, COURSE_DIMS = 512, 22, (100, 101)  # the GWU lecture's worked example
COURSE_VALUES = {100: -0.488, 101: -0.873}  # as the course rounds them (exactly: -0.4786, -0.8781)


def table(max_len: int, d_model: int) -> np.ndarray:
    """[max_len, d_model] float32: engine.positional_encoding as plotted."""
    return engine.positional_encoding(max_len, d_model).float().numpy()


def formula(pos: int, dim: int, d_model: int) -> str:
    """PE(pos, dim) written out as the course writes it."""
    even = dim - dim % 2
    wave = "sin" if dim % 2 == 0 else "cos"
    return f"{wave}({pos} / 10000<sup>{even}/{d_model}</sup>)"


def encoding_heatmap(max_len: int = 64, d_model: int = COURSE_D, pos: int | None = COURSE_POS,
                     dims: tuple[int, ...] = COURSE_DIMS) -> go.Figure:
    """PE as positions (down) x dimensions (across), z exactly engine.positional_encoding(max_len,
    d_model); the cells (pos, dims) framed and their values stated (by default the GWU lecture's
    worked example: d = 512, position 22, dimensions 100 and 101). pos None: nothing marked."""
    pe = table(max_len, d_model)  # [T, d]
    fig = go.Figure(go.Heatmap(
        z=pe, x=np.arange(d_model), y=np.arange(max_len), colorscale=DIVERGING, reversescale=True, zmin=-1, zmax=1,
        colorbar=dict(title=dict(text="PE(pos, i)", side="right"), thickness=12, tickvals=[-1, -0.5, 0, 0.5, 1]),
        hovertemplate="position %{y}<br>dimension i = %{x}<br>PE = %{z:.6g}<extra></extra>"))
    if pos is not None:
        mark_worked_values(fig, pe, pos, dims, d_model)
    fig.update_xaxes(title_text="dimension i (even: sin, odd: cos; slower to the right)")
    fig.update_yaxes(title_text="position pos", autorange="reversed")
    return finish(fig, f"Positional encoding, d = {d_model}: every position a different pattern",
                  height=max(HEIGHT, min(560, 140 + 5 * max_len)))


def mark_worked_values(fig: go.Figure, pe: np.ndarray, pos: int, dims: tuple[int, ...], d_model: int) -> None:
    """Frames cells (pos, dims) and writes their formulas and values in a box beside them."""
    max_len = pe.shape[0]
    if not 0 <= pos < max_len or not all(0 <= d < d_model for d in dims):
        raise ValueError(f"pos must be 0..{max_len - 1} and dims 0..{d_model - 1}; got pos {pos}, dims {dims}")
    fig.add_shape(type="rect", x0=min(dims) - 0.5, x1=max(dims) + 0.5, y0=pos - 0.5, y1=pos + 0.5,
                  line=dict(color=BLACK, width=2))
    course = (d_model, pos) == (COURSE_D, COURSE_POS)
    # formula and value on lines of their own: on one line the box ran over the colour bar at 1024 px
    lines = [f"PE({pos}, {d}) = {formula(pos, d, d_model)}<br>&nbsp;&nbsp;= {pe[pos, d]:.4f}"
             + (f" (course: ≈ {COURSE_VALUES[d]})" if course and d in COURSE_VALUES else "") for d in dims]
    left = max(dims) < d_model / 2  # the box on the side with room
    fig.add_annotation(x=max(dims) + 0.5 if left else min(dims) - 0.5, y=pos, text="<br>".join(lines),
                       showarrow=True, arrowhead=2, ax=60 if left else -60, ay=-40, xanchor="left" if left else "right",
                       align="left", bgcolor="rgba(255,255,255,0.92)", bordercolor=BLACK, font=dict(size=13))


def dimension_curves(max_len: int = 64, d_model: int = COURSE_D, dims: tuple[int, ...] = (0, 10, 100, 101),
                     pos: int | None = COURSE_POS) -> go.Figure:
    """A few dimensions of PE as curves over positions: each pair (2i, 2i+1) is a sine and a
    cosine of one frequency, slower as i grows; pos is marked (the GWU lecture's 22), with each
    curve's value there."""
    if len(dims) > len(CURVE_COLOURS) or not all(0 <= d < d_model for d in dims):
        raise ValueError(f"give up to {len(CURVE_COLOURS)} dimensions in 0..{d_model - 1}; got {dims}")
    pe = table(max_len, d_model)  # [T, d]
    fig = go.Figure()
    for dim, colour in zip(dims, CURVE_COLOURS):
        fig.add_trace(go.Scatter(
            x=np.arange(max_len), y=pe[:, dim], name=f"i = {dim} ({'sin' if dim % 2 == 0 else 'cos'})",
            line=dict(color=colour, width=2, dash="solid" if dim % 2 == 0 else "dot"),
            hovertemplate=f"dimension {dim}<br>position %{{x}}<br>PE = %{{y:.6g}}<extra></extra>"))
    if pos is not None:
        fig.add_vline(x=pos, line=dict(color=GREY, width=1.5, dash="dash"),
                      annotation_text=f"pos {pos}", annotation_position="top")
        fig.add_trace(go.Scatter(
            x=[pos] * len(dims), y=pe[pos, list(dims)], mode="markers", showlegend=False,
            marker=dict(color=list(CURVE_COLOURS[: len(dims)]), size=9, line=dict(color="white", width=1)),
            customdata=list(dims), hovertemplate="PE(%{x}, %{customdata}) = %{y:.6g}<extra></extra>"))
    fig.update_xaxes(title_text="position pos")
    fig.update_yaxes(title_text="PE(pos, i)", range=[-1.1, 1.1])
    fig = finish(fig, f"Dimensions of the positional encoding over positions, d = {d_model}")
    return legend_below(fig)  # under the axis title (at y = -0.22 it sat on "position pos")



def similarity(max_len: int, d_model: int) -> np.ndarray:
    """[max_len, max_len] float32: PE PE^T, the dot product of every two positions' encodings."""
    pe = engine.positional_encoding(max_len, d_model).float()  # [T, d]
    return (pe @ pe.T).numpy()  # [T, T]


def position_similarity(max_len: int = 64, d_model: int = COURSE_D) -> go.Figure:
    """PE PE^T: how alike two positions' encodings are. The diagonal is d/2 (each sin, cos pair
    adds sin^2 + cos^2 = 1), and the products fall off with |p - q| the same way wherever p is:
    near positions look alike, and attention can read distance from a dot product."""
    dots = similarity(max_len, d_model)  # [T, T]
    fig = go.Figure(go.Heatmap(
        z=dots, x=np.arange(max_len), y=np.arange(max_len), colorscale="Viridis",
        colorbar=dict(title=dict(text="PE(p)·PE(q)", side="right"), thickness=12),
        hovertemplate="p = %{y}, q = %{x}<br>PE(p)·PE(q) = %{z:.6g}<extra></extra>"))
    fig.update_xaxes(title_text="position q")
    fig.update_yaxes(title_text="position p", autorange="reversed")
    fig = finish(fig, f"Dot products between positions, PE PE<sup>T</sup> (d = {d_model}): near positions look alike",
                 height=max(HEIGHT, 460))
    return fig.update_layout(title_subtitle=dict(
        text=f"diagonal: d/2 = {d_model // 2} (each sin, cos pair adds 1); the same fall-off from every position",
        font=dict(size=12)), margin=dict(t=75))


def learned_vs_sinusoidal(learned: Tensor, max_len: int) -> go.Figure:
    """A trained model's learned positions (its Positions.table.weight, [positions, d]) beside the
    sinusoid of the same size, for the first max_len positions (the ones the task trains: rows
    past its length keep their random initial values). Each panel on its own symmetric scale."""
    if learned.dim() != 2 or not 1 <= max_len <= learned.shape[0]:
        raise ValueError(f"learned must be [positions, d] and max_len 1..positions; got {list(learned.shape)}, "
                         f"max_len {max_len}")
    d_model = learned.shape[1]
    panels = {"learned (trained)": learned[:max_len].detach().float().numpy(), "sinusoidal": table(max_len, d_model)}
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.14, subplot_titles=list(panels))
    for col, (name, z) in enumerate(panels.items(), start=1):  # each z: [max_len, d]
        reach = float(np.abs(z).max()) or 1.0
        fig.add_trace(go.Heatmap(
            z=z, x=np.arange(d_model), y=np.arange(max_len), colorscale=DIVERGING, reversescale=True,
            zmin=-reach, zmax=reach, name=name,
            colorbar=dict(x=0.43 if col == 1 else 1.0, thickness=10, title=dict(text="value", side="right")),
            hovertemplate=f"{name}<br>position %{{y}}<br>dimension %{{x}}<br>%{{z:.6g}}<extra></extra>"),
            row=1, col=col)
        fig.update_xaxes(title_text="dimension i", row=1, col=col)
    fig.update_yaxes(title_text="position pos", autorange="reversed", col=1)
    fig.update_yaxes(autorange="reversed", col=2)
    fig = finish(fig, f"Learned positions beside the sinusoid (d = {d_model}, first {max_len} positions)",
                 height=max(HEIGHT, min(520, 140 + 6 * max_len)))
    return fig.update_layout(margin=dict(t=80))
