"""Figure builders for the BPTT and RTRL page: every gradient entry by both methods, RTRL's online
gradient step by step, what each method costs as H and T grow, and truncated BPTT's bias against
its window. RTRL is blue and BPTT orange in every figure. No Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.architectures import legend_under
from app.charts.log_lines import floor_of, log_axis, log_line, mark_zeros
from app.charts.style import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY_BLUE, VERMILLION, axis, finish

RTRL, BPTT = BLUE, ORANGE
PARAMETER_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, SKY_BLUE, VERMILLION, BLACK)


def same_gradient(entries: pd.DataFrame) -> go.Figure:
    """Every entry of every parameter's gradient, RTRL's (y) against autograd's BPTT (x), one colour
    per parameter, on the line y = x where they agree. entries: columns parameter, bptt, rtrl."""
    fig = go.Figure()
    for k, (name, rows) in enumerate(entries.groupby("parameter", sort=False)):
        fig.add_trace(go.Scatter(
            x=rows["bptt"], y=rows["rtrl"], name=name, mode="markers",
            marker=dict(color=PARAMETER_COLOURS[k % len(PARAMETER_COLOURS)], size=6, opacity=0.8),
            hovertemplate=f"{name}<br>BPTT %{{x:.6g}}<br>RTRL %{{y:.6g}}<extra></extra>"))
    reach = float(np.abs(entries[["bptt", "rtrl"]].to_numpy()).max()) * 1.08 or 1.0
    fig.add_trace(go.Scatter(x=[-reach, reach], y=[-reach, reach], name="y = x", mode="lines",
                             line=dict(color=GREY, dash="dash", width=1.2), hoverinfo="skip"))
    fig.update_xaxes(title_text="∂L/∂θ by BPTT (autograd)", range=[-reach, reach], zeroline=False)
    fig.update_yaxes(title_text="∂L/∂θ by RTRL", range=[-reach, reach], zeroline=False, scaleanchor="x")
    return legend_under(finish(fig, f"All {len(entries):,} gradient entries: RTRL against BPTT", height=420))


def online_gradient(online: pd.DataFrame, t: int, bptt_norm: float) -> go.Figure:
    """RTRL's ‖∂L_≤t/∂W_hh‖ after every step t (online: columns t, norm), and BPTT's at step t, got by
    backpropagating through steps 1..t, as a marker on it."""
    fig = go.Figure(go.Scatter(
        x=online["t"], y=online["norm"], name="RTRL, after each step", mode="lines+markers" if len(online) <= 60
        else "lines", line=dict(color=RTRL, width=2), marker=dict(size=5),
        hovertemplate="RTRL after step %{x}<br>‖∂L≤t/∂W_hh‖ %{y:.6g}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=[t], y=[bptt_norm], name=f"BPTT through steps 1..{t}", mode="markers",
        marker=dict(color=BPTT, size=13, symbol="diamond-open", line=dict(width=2.5)),
        hovertemplate="BPTT through steps 1..%{x}<br>‖∂L≤t/∂W_hh‖ %{y:.6g}<extra></extra>"))
    fig.add_vline(x=t, line=dict(color=GREY, dash="dot", width=1))
    fig.update_xaxes(title_text="step t (inputs read so far)", range=[0.5, len(online) + 0.5])
    fig.update_yaxes(title_text="‖∂(ℓ₁+…+ℓ_t)/∂W_hh‖", rangemode="tozero")
    return legend_under(finish(fig, "The gradient of the loss so far, ready after every step"))


def along(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    """The cost grid's rows of one sweep ("H" or "T"), the settings' own point ("both") included, by size."""
    return frame[frame["sweep"].isin([by, "both"])].sort_values(by)


def slope_guide(x: np.ndarray, through: tuple[float, float], power: int, name: str, colour: str) -> go.Scatter:
    """A dashed line ∝ x^power through one measured point: the growth the multiply-adds predict, not a measurement."""
    x0, y0 = through
    return go.Scatter(x=x, y=y0 * (x / x0) ** power, name=name, mode="lines", showlegend=True,
                      line=dict(color=colour, dash="dash", width=1.2), opacity=0.7,
                      hovertemplate=f"{name}<br>%{{x}}: %{{y:.3g}}<extra></extra>")


def cost_figure(frame: pd.DataFrame, what: str) -> go.Figure:
    """Two log-log panels of the measured grid: `what` ("time" or "memory") against H at the settings'
    T (left) and against T at their H (right), RTRL and BPTT. Time gets the H⁴ and H² slopes through
    the largest H's measurement, dashed."""
    columns = {"time": ("rtrl_ms", "bptt_ms", "ms per time step"), "memory": ("rtrl_kb", "bptt_kb", "KB kept")}
    rtrl, bptt, unit = columns[what]
    by_h, by_t = along(frame, "H"), along(frame, "T")
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.13, subplot_titles=(
        f"as H grows (T = {by_h['T'].iloc[0]})", f"as T grows (H = {by_t['H'].iloc[0]})"))
    names = {"time": ("RTRL", "BPTT"), "memory": ("RTRL: S_t (H x P)", "BPTT: saved by autograd")}
    for col, (rows, size) in enumerate(((by_h, "H"), (by_t, "T")), start=1):
        for column, name, colour in ((rtrl, names[what][0], RTRL), (bptt, names[what][1], BPTT)):
            fig.add_trace(go.Scatter(
                x=rows[size], y=rows[column], name=name, legendgroup=name, showlegend=col == 1, mode="lines+markers",
                line=dict(color=colour, width=2), marker=dict(size=7),
                hovertemplate=f"{name}<br>{size} %{{x}}<br>%{{y:.4g}} {unit}<extra></extra>"), row=1, col=col)
    if what == "time" and len(by_h) > 1:  # over the last doubling of H: 16x for H⁴, 4x for H²
        hs, last = by_h["H"].to_numpy(float)[-2:], by_h.iloc[-1]
        fig.add_trace(slope_guide(hs, (last["H"], last[rtrl]), 4, "∝ H⁴ (RTRL's multiply-adds)", RTRL), row=1, col=1)
        fig.add_trace(slope_guide(hs, (last["H"], last[bptt]), 2, "∝ H² (BPTT's)", BPTT), row=1, col=1)
    for col, (rows, size) in enumerate(((by_h, "H"), (by_t, "T")), start=1):
        fig.update_xaxes(type="log", title_text=f"{size} ({'units' if size == 'H' else 'time steps'})",
                         tickvals=list(rows[size]), ticktext=[str(v) for v in rows[size]], row=1, col=col)
    drawn = np.concatenate([np.asarray(trace.y, dtype=float) for trace in fig.data])  # guides included
    fig.update_yaxes(axis(drawn) | dict(type="log"))  # one range for both panels, ticks at 1-2-5
    fig.update_yaxes(title_text=f"{unit} (log)", row=1, col=1)
    title = "Time per step, measured" if what == "time" else "Memory to have the gradient, measured"
    return legend_under(finish(fig, title, height=360))


def truncation_bias(frame: pd.DataFrame, T: int) -> go.Figure:
    """‖g_k − g‖ / ‖g‖ of truncated BPTT's ∂L/∂W_hh with window k against the exact g (frame: window,
    relative_error, cosine), log axis, exact zeros drawn at a floor and marked; a dotted line at k = T."""
    floor = floor_of(frame["relative_error"])
    line = log_line(frame["window"], frame["relative_error"], "truncated BPTT", VERMILLION, floor,
                    "relative error", x_label="window k", markers=True)
    line.update(text=[f"{note}<br>cosine {cosine:.6f}" for note, cosine in zip(line.text, frame["cosine"])])
    fig = go.Figure(line)
    mark_zeros(fig, floor, x_label="window k")
    fig.add_vline(x=T, line=dict(color=GREY, dash="dot", width=1))
    fig.add_annotation(x=np.log10(T), y=1, yref="paper", text=f"k = T = {T}: full BPTT", showarrow=False,
                       xanchor="right", yanchor="bottom", font=dict(size=12, color=GREY))
    ticks = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500) if k < 0.8 * T] + [T]
    fig.update_xaxes(type="log", title_text="window k (steps the gradient may flow back)", tickvals=ticks,
                     ticktext=list(map(str, ticks)), range=[np.log10(0.8), np.log10(1.25 * T)])
    fig.update_yaxes(log_axis(fig) | dict(title_text="‖g_k − g‖ / ‖g‖ for W_hh"))
    return legend_under(finish(fig, "Truncated BPTT's error against the exact gradient"))
