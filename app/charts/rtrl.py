"""Figure builders for the BPTT and RTRL page: every gradient entry by both methods, RTRL's online
gradient step by step, what each method costs as H and T grow, and truncated BPTT's bias against
its window. RTRL is blue and BPTT orange in every figure. No Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.log_lines import floor_of
from app.charts.style import BLACK, BLUE, GREEN, GREY, ORANGE, PURPLE, SKY_BLUE, VERMILLION, axis, finish, legend_below

RTRL, BPTT = BLUE, ORANGE
PARAMETER_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, SKY_BLUE, VERMILLION, BLACK)


def same_gradient(entries: pd.DataFrame) -> go.Figure:
    """Every entry of every parameter's gradient, RTRL's (y) against autograd's BPTT (x), one colour
    per parameter, on the line y = x where they agree. entries: columns parameter (W_hh...), bptt, rtrl."""
    fig = go.Figure()
    for k, (name, rows) in enumerate(entries.groupby("parameter", sort=False)):
        fig.add_trace(go.Scatter(
            x=rows["bptt"], y=rows["rtrl"], name=subscript(name), mode="markers",
            marker=dict(color=PARAMETER_COLOURS[k % len(PARAMETER_COLOURS)], size=6, opacity=0.8),
            hovertemplate=f"{name}<br>BPTT %{{x:.6g}}<br>RTRL %{{y:.6g}}<extra></extra>"))
    reach = float(np.abs(entries[["bptt", "rtrl"]].to_numpy()).max()) * 1.08 or 1.0
    fig.add_trace(go.Scatter(x=[-reach, reach], y=[-reach, reach], name="y = x", mode="lines",
                             line=dict(color=GREY, dash="dash", width=1.2), hoverinfo="skip"))
    fig.update_xaxes(title_text="∂L/∂θ by BPTT (autograd)", range=[-reach, reach], zeroline=False)
    fig.update_yaxes(title_text="∂L/∂θ by RTRL", range=[-reach, reach], zeroline=False)
    return legend_below(finish(fig, f"All {len(entries):,} gradient entries: RTRL against BPTT", height=400))


def subscript(symbol: str) -> str:
    """W_hh as plotly writes it, W<sub>hh</sub>."""
    letter, _, index = symbol.partition("_")
    return f"{letter}<sub>{index}</sub>"


def online_gradient(online: pd.DataFrame, t: int, bptt_norm: float) -> go.Figure:
    """RTRL's ‖∂L_≤t/∂W_hh‖ after every step t (online: columns t, norm), and BPTT's at step t, got by
    backpropagating through steps 1..t, as a marker on it."""
    fig = go.Figure(go.Scatter(
        x=online["t"], y=online["norm"], name="RTRL, after each step", mode="lines+markers" if len(online) <= 60
        else "lines", line=dict(color=RTRL, width=2), marker=dict(size=5),
        hovertemplate="RTRL after step %{x}<br>‖∂L<sub>≤t</sub>/∂W<sub>hh</sub>‖ %{y:.6g}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=[t], y=[bptt_norm], name=f"BPTT through steps 1..{t}", mode="markers",
        marker=dict(color=BPTT, size=13, symbol="diamond-open", line=dict(width=2.5)),
        hovertemplate="BPTT through steps 1..%{x}<br>‖∂L<sub>≤t</sub>/∂W<sub>hh</sub>‖ %{y:.6g}<extra></extra>"))
    fig.add_vline(x=t, line=dict(color=GREY, dash="dot", width=1))
    fig.update_xaxes(title_text="step t (inputs read so far)", range=[0.5, len(online) + 0.5])
    fig.update_yaxes(title_text="‖∂(ℓ<sub>1</sub>+…+ℓ<sub>t</sub>)/∂W<sub>hh</sub>‖", rangemode="tozero")
    return legend_below(finish(fig, "The gradient of the loss so far, ready after every step"))


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
    fig = finish(fig, title, height=380)
    return legend_below(fig.update_layout(margin=dict(t=80)))  # the panels' titles under the figure's


def truncation_bias(frame: pd.DataFrame, T: int) -> go.Figure:
    """‖g_k − g‖ / ‖g‖ of truncated BPTT's ∂L/∂W_hh with window k against the exact g (frame: window,
    relative_error, cosine), on a log axis over the windows shorter than T; k = T, full BPTT, whose
    error is rounding (or exactly 0), is drawn at the axis's floor, a tenth of the smallest error
    below T, and says its value; a dotted line at k = T."""
    cut, full = frame[frame["window"] < T], frame[frame["window"] >= T]
    floor = floor_of(cut["relative_error"])
    fig = go.Figure(go.Scatter(
        x=cut["window"], y=cut["relative_error"], customdata=cut["cosine"], name="truncated BPTT, window k < T",
        mode="lines+markers", line=dict(color=VERMILLION, width=2), marker=dict(size=6),
        hovertemplate="window k %{x}<br>relative error %{y:.3g}<br>cosine %{customdata:.6f}<extra></extra>"))
    for _, row in full.iterrows():
        error = row["relative_error"]
        fig.add_trace(go.Scatter(
            x=[row["window"]], y=[max(error, floor)], name=f"k = T: full BPTT, error {error:.0e} (rounding)",
            mode="markers", marker=dict(color=GREEN, size=13, symbol="star"),
            hovertemplate=f"window k %{{x}} = T: full BPTT<br>relative error {error:.2g}, drawn at the "
            f"floor<extra></extra>"))
    fig.add_vline(x=T, line=dict(color=GREY, dash="dot", width=1))
    ticks = [k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500) if k < 0.8 * T] + [T]
    fig.update_xaxes(type="log", title_text="window k (steps the gradient may flow back)", tickvals=ticks,
                     ticktext=list(map(str, ticks)), range=[np.log10(0.8), np.log10(1.25 * T)])
    fig.update_yaxes(axis([*cut["relative_error"], floor]) | dict(type="log", title_text="‖g_k − g‖ / ‖g‖ for W_hh"))
    return legend_below(finish(fig, "Truncated BPTT's error against the exact gradient", height=340))
