"""A translator's held-out BLEU by English sentence length (Bahdanau et al. 2015, Figure 2): one line a model,
each length span a point with how many sentences it scored, over the range a lesson's measured runs took.
No Streamlit here."""
from __future__ import annotations

import plotly.graph_objects as go

from app.charts.architectures import legend_under
from app.charts.lesson_band import translucent
from app.charts.log_lines import PALETTE
from app.charts.style import finish

Spans = dict[tuple[int, int], tuple[int, float]]  # (low, high) English words -> (sentences scored, corpus BLEU)


def span_label(span: tuple[int, int]) -> str:
    return f"{span[0]}-{span[1]}"


def over_length(measured: dict[str, Spans], ranges: dict[str, dict[tuple[int, int], tuple[float, float]]] | None = None,
                ranged_over: str = "") -> go.Figure:
    """measured: model -> its spans, each a line; ranges: a lesson's run -> span -> (lowest, highest) BLEU over
    what `ranged_over` names ("3 seeds"), each a shaded range in the colour of the line of the same index (a
    lesson's run and its seed measured here share one)."""
    fig = go.Figure()
    for k, (run, spans) in enumerate((ranges or {}).items()):
        colour, labels = PALETTE[k % len(PALETTE)], [span_label(span) for span in spans]
        fig.add_trace(go.Scatter(x=labels, y=[high for _, high in spans.values()], mode="lines", line=dict(width=0),
                                 showlegend=False, hoverinfo="skip", legendgroup=run))
        fig.add_trace(go.Scatter(
            x=labels, y=[low for low, _ in spans.values()], mode="lines", line=dict(width=0), fill="tonexty",
            fillcolor=translucent(colour, 0.22), name=f"{run}: {ranged_over}", legendgroup=run,
            customdata=[high for _, high in spans.values()],
            hovertemplate=f"{run}<br>%{{x}} English words: BLEU %{{y:.1f}} to %{{customdata:.1f}}<extra></extra>"))
    for k, (model, spans) in enumerate(measured.items()):
        counts = [n for n, _ in spans.values()]
        fig.add_trace(go.Scatter(
            x=[span_label(span) for span in spans], y=[score for _, score in spans.values()], name=model,
            mode="lines+markers", line=dict(color=PALETTE[k % len(PALETTE)], width=2), marker=dict(size=8),
            customdata=counts, hovertemplate=f"{model}<br>%{{x}} English words: BLEU %{{y:.1f}}<br>%{{customdata}} "
                                             "held-out sentences<extra></extra>"))
    fig.update_xaxes(title_text="English sentence length (words)", type="category")
    fig.update_yaxes(title_text="held-out BLEU (0-100)", rangemode="tozero")
    return legend_under(finish(fig, "Held-out BLEU by sentence length"))
