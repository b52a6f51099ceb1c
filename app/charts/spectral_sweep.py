"""Figures of the spectral-radius sweep (Gradients page): ‖∂L/∂h_t‖ of fresh tanh and linear RNNs
whose W_hh has spectral radius ρ, and the first step's share of the gradient against ρ with
Pascanu et al.'s conditions as bands. A DataFrame in, a plotly Figure out; no Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.gradients import GRAD_AXIS, RATIO_AXIS
from app.charts.labels import T_AXIS
from app.charts.log_lines import floor_of, log_line
from app.charts.style import (
    BLACK,
    BLUE,
    GREY,
    LEGEND_ROW,
    ORANGE,
    PURPLE,
    SKY_BLUE,
    UNDER_AXIS,
    VERMILLION,
    WIDTH_ENCODES,
    axis,
    finish,
    legend_rows,
)

FAN_COLOURS = {0.8: BLUE, 0.9: SKY_BLUE, 1.0: GREY, 1.1: ORANGE, 1.2: VERMILLION}  # cool below 1, grey at 1, warm above
PANELS = {"tanh": "tanh RNN", "linear": "linear RNN"}
THEORY = "ρ^(T−t), met at t = T"
RHO_AXIS = "spectral radius ρ(W_hh) = max |λ|"
# The fan's widths tell the slider's line from the others: presentation mode keeps them (style.for_projector).
BOLD_CHOSEN = {WIDTH_ENCODES: "the slider's ρ, bold"}
# The plot area of a full-width figure at 1024 px with the sidebar open: the narrowest it is drawn.
FULL_WIDTH_PLOT = 560  # px
ACTIVATION_LOOK = {"tanh": (BLUE, "circle"), "linear": (ORANGE, "square")}


def slider_name(rho: float) -> str:
    return f"ρ = {rho:g} (slider)"


def legend_under(fig: go.Figure) -> go.Figure:
    """The legend in rows under the x axis's title, as style.legend_below places it, with its rows
    counted for a full-width figure (legend_below counts them for half a page: at full width that
    left two empty rows under this figure's legend)."""
    rows = legend_rows(fig, width=FULL_WIDTH_PLOT)
    height = fig.layout.height + LEGEND_ROW * (rows - 1)
    bottom = int(UNDER_AXIS + LEGEND_ROW * rows + 5)
    plot = height - fig.layout.margin.t - bottom
    return fig.update_layout(height=height, margin=dict(b=bottom), legend=dict(
        orientation="h", x=0, xanchor="left", y=-UNDER_AXIS / plot, yanchor="top", font=dict(size=12)))


def finite(values) -> np.ndarray:
    """Values with inf and NaN (a gradient that overflowed float32) as NaN: a gap in the line."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


def positive(values) -> list[float]:
    """The values a log axis can show: finite and > 0 (its range is taken over these)."""
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values) & (values > 0)].tolist()


def theory(values: np.ndarray, rho: float) -> np.ndarray:
    """ρ^(T−1−t) · ‖∂L/∂h_{T−1}‖ for t = 0..T−1: the line that meets the curve at its last step."""
    steps_back = np.arange(len(values))[::-1]  # [T]
    return rho**steps_back * values[-1]


def fan(curves: pd.DataFrame, chosen: float) -> go.Figure:
    """‖∂L/∂h_t‖ against t on a shared log axis, a panel per activation: a faint line per ρ of
    FAN_COLOURS, the slider's ρ bold and black, and the dotted ρ^(T−t) line through its last point.

    curves   columns activation, rho, t, value (every ρ of the fan and the chosen one)
    """
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.05,
                        subplot_titles=[PANELS[a] for a in PANELS])
    floor, drawn = floor_of(finite(curves["value"])), []
    for col, activation in enumerate(PANELS, start=1):
        rows = curves[curves["activation"] == activation]
        for rho, colour in FAN_COLOURS.items():
            one = rows[rows["rho"] == rho].sort_values("t")
            line = log_line(one["t"], finite(one["value"]), f"ρ = {rho:g}", colour, floor, "‖∂L/∂h_t‖",
                            width=2, markers=False)
            fig.add_trace(line.update(opacity=0.75, showlegend=col == 1, meta=BOLD_CHOSEN), row=1, col=col)
        mine = rows[rows["rho"] == chosen].sort_values("t")
        values = finite(mine["value"])
        bold = log_line(mine["t"], values, slider_name(chosen), BLACK, floor, "‖∂L/∂h_t‖", width=4.5, markers=False)
        fig.add_trace(bold.update(showlegend=col == 1, meta=BOLD_CHOSEN), row=1, col=col)
        line = theory(values, chosen)
        fig.add_trace(go.Scatter(
            x=mine["t"], y=line, name=THEORY, legendgroup=THEORY, showlegend=col == 1, mode="lines",
            line=dict(color=PURPLE, dash="dot", width=2.5),  # purple: seen on the black line it may run on
            hovertemplate=f"ρ^(T−t) line, ρ = {chosen:g}<br>t %{{x}}<br>%{{y:.6g}}<extra></extra>",
        ), row=1, col=col)
        drawn += positive(rows["value"]) + positive(line)
    fig.update_xaxes(title_text=T_AXIS)
    fig.update_yaxes(**(axis(drawn) | dict(type="log")))
    fig.update_yaxes(title_text=GRAD_AXIS, col=1)
    fig = finish(fig, f"‖∂L/∂h_t‖ of fresh RNNs as ρ(W_hh) sweeps {min(FAN_COLOURS):g} → {max(FAN_COLOURS):g}",
                 height=360)
    fig.update_annotations(font=dict(size=13, color=BLACK))  # the panels' titles
    return legend_under(fig.update_layout(margin=dict(t=75)))


def band(fig: go.Figure, low: float, high: float, colour: str, text: str, top: bool) -> None:
    """A shaded range of ρ with its words in a corner the rising curves leave empty: top left
    (`top`) for the low band, bottom right for the high one."""
    fig.add_vrect(x0=low, x1=high, fillcolor=colour, opacity=0.12, line_width=0, layer="below")
    fig.add_annotation(x=low if top else high, xanchor="left" if top else "right", y=1 if top else 0, yref="paper",
                       yanchor="top" if top else "bottom", text=text, showarrow=False,
                       font=dict(size=11, color=BLACK), bgcolor="rgba(255,255,255,0.75)")


def ratios(points: pd.DataFrame, chosen: float, seq_len: int, sigma_per_rho: float) -> go.Figure:
    """‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ against ρ for each activation, the dotted ρ^(T−1), the slider's ρ,
    and Pascanu et al.'s bands: σ_max < 1 (vanishing guaranteed) and σ_max > 1 (exploding possible).
    σ_max = sigma_per_rho · ρ: scaling W_hh scales every singular value with its eigenvalues.

    points   columns activation, rho, ratio
    """
    fig = go.Figure()
    low, high = float(points["rho"].min()), float(points["rho"].max())
    edge = 1 / sigma_per_rho  # the ρ at which σ_max = 1/γ = 1
    if edge > low:
        band(fig, low, min(edge, high), SKY_BLUE, "σ_max < 1: must vanish", top=True)
    if edge < high:
        band(fig, max(edge, low), high, VERMILLION, "σ_max > 1: may explode", top=False)
    for activation, (colour, symbol) in ACTIVATION_LOOK.items():
        rows = points[points["activation"] == activation].sort_values("rho")
        fig.add_trace(go.Scatter(
            x=rows["rho"], y=finite(rows["ratio"]), name=PANELS[activation], mode="lines+markers",
            line=dict(color=colour, width=2), marker=dict(symbol=symbol, size=7),
            hovertemplate=f"{PANELS[activation]}<br>ρ %{{x:g}}<br>ratio %{{y:.6g}}<extra></extra>",
        ))
    dense = np.linspace(low, high, 81)
    fig.add_trace(go.Scatter(  # last, over the linear RNN's points, which may sit on it
        x=dense, y=dense ** (seq_len - 1), name=f"ρ^(T−1), T = {seq_len}", mode="lines",
        line=dict(color=PURPLE, dash="dot", width=2.5), hovertemplate="ρ %{x:.3f}<br>ρ^(T−1) %{y:.6g}<extra></extra>",
    ))
    fig.add_vline(x=chosen, line=dict(color=BLACK, dash="dash", width=1.5))
    drawn = positive(points["ratio"]) + positive(dense ** (seq_len - 1))
    fig.update_xaxes(title_text=RHO_AXIS, range=[low - 0.01, high + 0.01], dtick=0.1)
    fig.update_yaxes(title_text=RATIO_AXIS, **(axis(drawn) | dict(type="log")))
    title = f"First step's share of the gradient against ρ (dashed: the slider's {chosen:.2f})"
    return legend_under(finish(fig, title, height=330))
