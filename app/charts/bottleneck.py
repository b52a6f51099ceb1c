"""The encoder-decoder bottleneck, measured: held-out accuracy against source length with and
without attention, from the same budget (benchmarks/attention_bottleneck.py writes the rows the
app ships in app/data/bottleneck.json). A frame in, a plotly Figure out; no Streamlit here."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from app.charts.style import BLUE, VERMILLION, finish, legend_below

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "bottleneck.json"
NAMES = {"dot": "dot attention", "none": "no attention (the final state only)"}
COLOURS = {"dot": BLUE, "none": VERMILLION}


def measured(path: Path = SHIPPED) -> tuple[pd.DataFrame, dict]:
    """(the mean over seeds of each length and attention ("dot" or "none"), with the seeds' lowest and highest
    whole-sequence accuracy; the file's settings and when and how it was measured)."""
    data = json.loads(path.read_text())
    rows = pd.DataFrame(data["rows"])
    rows["attention"] = rows["attention"].fillna("none")  # null in the file: the final state only
    means = rows.groupby(["attention", "seq_len"]).agg(
        sequence_accuracy=("sequence_accuracy", "mean"), symbol_accuracy=("symbol_accuracy", "mean"),
        lowest=("sequence_accuracy", "min"), highest=("sequence_accuracy", "max"), seeds=("seed", "nunique"),
    ).reset_index()
    return means, {k: v for k, v in data.items() if k != "rows"}


def bottleneck_curves(means: pd.DataFrame, steps: int) -> go.Figure:
    """Whole sequences right (solid, the seeds' range as error bars) and symbols right (dotted)
    against the source length, one colour with attention and one without."""
    fig = go.Figure()
    for attention in ("none", "dot"):
        rows = means[means["attention"] == attention].sort_values("seq_len")
        colour, name = COLOURS[attention], NAMES[attention]
        fig.add_trace(go.Scatter(
            x=rows["seq_len"], y=rows["sequence_accuracy"] * 100, name=f"{name}: whole sequences",
            mode="lines+markers", line=dict(color=colour, width=2.5),
            error_y=dict(type="data", symmetric=False, array=(rows["highest"] - rows["sequence_accuracy"]) * 100,
                         arrayminus=(rows["sequence_accuracy"] - rows["lowest"]) * 100, color=colour, thickness=1),
            hovertemplate="source length %{x}<br>whole sequences right: %{y:.1f}%<extra></extra>"))
        fig.add_trace(go.Scatter(
            x=rows["seq_len"], y=rows["symbol_accuracy"] * 100, name=f"{name}: symbols", mode="lines+markers",
            line=dict(color=colour, width=1.5, dash="dot"), marker=dict(symbol="circle-open"),
            hovertemplate="source length %{x}<br>symbols right: %{y:.1f}%<extra></extra>"))
    fig.update_xaxes(title_text="source length (symbols to copy)", tickvals=sorted(means["seq_len"].unique()))
    fig.update_yaxes(title_text="held-out, % right", range=[-3, 103])
    return legend_below(finish(fig, f"The bottleneck: copying after {steps} steps, with and without attention"))
