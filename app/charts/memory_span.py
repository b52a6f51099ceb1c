"""Short-term memory, measured: the best held-out accuracy each cell reaches on delayed recall
within the budget, against the lag (app/session/memory_span.py reads the runs the app ships). A frame
in, a plotly Figure out; no Streamlit here."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from app.charts.style import BLUE, GREEN, GREY, ORANGE, VERMILLION, finish, legend_below

COLOURS = {"tanh RNN": VERMILLION, "GRU": GREEN, "LSTM": ORANGE, "LSTM, forget bias 3": BLUE}


def memory_span_curves(means: pd.DataFrame, settings: dict, spans: dict[str, int | None],
                       lag: int | None = None) -> go.Figure:
    """One line a cell: the best held-out accuracy within the budget at each lag (mean over the
    seeds, their range as bars), the cell's longest lag learned in its legend entry; chance and the
    'learned' level as dotted lines, and the student's own lag, when given, as a dashed vertical one."""
    fig = go.Figure()
    seeds = len(settings["seeds"])
    for cell in settings["cells"]:
        rows = means[means["cell"] == cell].sort_values("lag")
        span = spans[cell]
        name = f"{cell}: up to lag {span}" if span is not None else f"{cell}: no lag learned"
        colour = COLOURS.get(cell, GREY)
        tried = [f"{n} of {seeds} seeds tried, {k} learned it" for n, k in zip(rows["tried"], rows["learned"])]
        fig.add_trace(go.Scatter(
            x=rows["lag"], y=rows["best"] * 100, name=name, mode="lines+markers", line=dict(color=colour, width=2.5),
            error_y=dict(type="data", symmetric=False, array=(rows["highest"] - rows["best"]) * 100,
                         arrayminus=(rows["best"] - rows["lowest"]) * 100, color=colour, thickness=1),
            customdata=tried,
            hovertemplate=f"{cell}<br>lag %{{x}}<br>best held-out accuracy: %{{y:.1f}}%<br>%{{customdata}}"
                          "<extra></extra>"))
    chance = 100 / settings["symbols"]
    fig.add_hline(y=chance, line=dict(color=GREY, dash="dot", width=1.5), annotation_text=f"chance {chance:.0f}%",
                  annotation_position="bottom right")
    learned = 100 * settings["learned"]
    fig.add_hline(y=learned, line=dict(color=GREY, dash="dot", width=1.5), annotation_text=f"learned: {learned:.0f}%",
                  annotation_position="bottom left")
    if lag is not None:  # a trace, not a shape: on a log axis plotly places shapes and annotations differently
        fig.add_trace(go.Scatter(x=[lag, lag], y=[0, 105], name=f"your lag ({lag})", mode="lines",
                                 line=dict(color="black", dash="dash", width=1.5),
                                 hovertemplate=f"your lag: {lag}<extra></extra>"))
    fig.update_xaxes(title_text="lag (steps between the symbol and the question)", type="log",
                     tickvals=settings["lags"], ticktext=[str(n) for n in settings["lags"]])
    fig.update_yaxes(title_text="best held-out accuracy, %", range=[0, 105])
    title = f"Short-term memory: the best held-out accuracy within {settings['steps']} steps, by lag"
    return legend_below(finish(fig, title, height=340))
