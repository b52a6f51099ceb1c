"""Figure builders for the Generate page: the distribution over the next character at one
position, at a temperature, beside the model's own (temperature 1). No Streamlit here."""
from __future__ import annotations

import plotly.graph_objects as go
import torch

from app.charts.labels import visible
from app.charts.style import BLUE, GREY, finish

SHOWN = 15  # characters drawn: the most likely at the chosen temperature


def next_character(logits: torch.Tensor, vocab: tuple[str, ...], temperature: float, after: str,
                   top: int = SHOWN) -> go.Figure:
    """Bars: softmax(z / temperature) of the `top` most likely characters (at that temperature);
    grey markers: the same characters at temperature 1, what the model itself says.

    logits  [V]: the scores of the character after `after` (the text read so far, for the title)
    """
    scaled = torch.softmax(logits.double() / temperature, dim=-1)  # [V]
    plain = torch.softmax(logits.double(), dim=-1)  # [V]
    order = scaled.argsort(descending=True)[:top].tolist()
    labels = [visible(vocab[i]) if vocab[i].strip() else f"'{visible(vocab[i])}'" for i in order]
    fig = go.Figure(go.Bar(x=labels, y=scaled[order].tolist(), name=f"temperature {temperature:g}", marker_color=BLUE,
                           hovertemplate="%{x}: %{y:.3f}<extra>temperature " + f"{temperature:g}</extra>"))
    if temperature != 1:  # at 1 the model's own is the bars: a second entry named the same thing twice
        fig.add_trace(go.Scatter(x=labels, y=plain[order].tolist(), name="temperature 1 (the model)", mode="markers",
                                 marker=dict(color=GREY, symbol="line-ew-open", size=22, line=dict(width=3)),
                                 hovertemplate="%{x}: %{y:.3f}<extra>temperature 1</extra>"))
    fig.update_xaxes(title_text=f"the {len(order)} most likely next characters", type="category")
    # From 0 to at least 0.2: flat distributions stay readable, and a sharpening one shows its rise.
    fig.update_yaxes(title_text="probability", range=[0, max(0.2, 1.1 * float(max(scaled.max(), plain.max())))])
    fig = finish(fig, f"Next character after “{visible(after[-12:])}”")
    return fig.update_layout(legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", xanchor="left"),
                             margin=dict(t=80))


def repetition_by_rule(measured: dict[str, tuple[float, float]], yours: tuple[str, float] | None) -> go.Figure:
    """Horizontal: each decoding rule's seq-rep-4 as measured over the lesson's ensemble (grey, from its lowest to
    its highest: one tick where every run gave one value), and the student's own text (a blue diamond on
    a row of its own, named by how it was written), on one 0-100% axis.

    measured  rule's label -> (lowest, highest) over the ensemble's runs
    yours     (how your text was written, its seq-rep-4), or None (fewer than four words written)
    """
    rows = list(measured)
    lows, highs = [measured[row][0] for row in rows], [measured[row][1] for row in rows]
    fig = go.Figure(go.Scatter(  # a tick at each end, joined: one value (every run alike) is one tick
        y=rows, x=[(low + high) / 2 for low, high in zip(lows, highs)], mode="markers", cliponaxis=False,
        error_x=dict(type="data", array=[(high - low) / 2 for low, high in zip(lows, highs)], color=GREY,
                     thickness=6, width=0),
        marker=dict(color=GREY, symbol="line-ns-open", size=18, line=dict(width=3)),
        name="measured (every seed and kernel path)", customdata=list(zip(lows, highs)),
        hovertemplate="%{y}: %{customdata[0]:.1%} to %{customdata[1]:.1%}<extra>measured</extra>"))
    if yours is not None:
        how, value = yours
        fig.add_trace(go.Scatter(y=[f"your text: {how}"], x=[value], mode="markers", name="your text",
                                 marker=dict(color=BLUE, symbol="diamond", size=14),
                                 hovertemplate="your text: %{x:.1%}<extra></extra>"))
    order = ([f"your text: {yours[0]}"] if yours is not None else []) + rows
    fig.update_yaxes(categoryorder="array", categoryarray=order[::-1], title_text="decoding rule")
    fig.update_xaxes(range=[-0.02, 1.02], tickformat=".0%", title_text="seq-rep-4: 4-word sequences repeated")
    fig = finish(fig, "Repetition by decoding rule", height=300)
    return fig.update_layout(legend=dict(orientation="h", x=0, y=-0.35, yanchor="top", xanchor="left"),
                             margin=dict(b=110))
