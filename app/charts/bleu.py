"""A translator's held-out BLEU by English sentence length (Bahdanau et al. 2015, Figure 2): one line a model,
each length span a point with how many sentences it scored. No Streamlit here."""
from __future__ import annotations

import plotly.graph_objects as go

from app.charts.architectures import legend_under
from app.charts.log_lines import PALETTE
from app.charts.style import finish


def over_length(measured: dict[str, dict[tuple[int, int], tuple[int, float]]]) -> go.Figure:
    """measured: model -> {(low, high) English words: (sentences scored, corpus BLEU)}."""
    fig = go.Figure()
    for k, (model, spans) in enumerate(measured.items()):
        labels = [f"{low}-{high}" for low, high in spans]
        counts = [n for n, _ in spans.values()]
        fig.add_trace(go.Scatter(
            x=labels, y=[bleu for _, bleu in spans.values()], name=model, mode="lines+markers",
            line=dict(color=PALETTE[k % len(PALETTE)], width=2), marker=dict(size=8), customdata=counts,
            hovertemplate=f"{model}<br>%{{x}} English words: BLEU %{{y:.1f}}<br>%{{customdata}} held-out "
                          "sentences<extra></extra>"))
    fig.update_xaxes(title_text="English sentence length (words)", type="category")
    fig.update_yaxes(title_text="held-out BLEU (0-100)", rangemode="tozero")
    return legend_under(finish(fig, "Held-out BLEU by sentence length"))
