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
    fig = go.Figure([
        go.Bar(x=labels, y=scaled[order].tolist(), name=f"temperature {temperature:g}", marker_color=BLUE,
               hovertemplate="%{x}: %{y:.3f}<extra>temperature " + f"{temperature:g}</extra>"),
        go.Scatter(x=labels, y=plain[order].tolist(), name="temperature 1 (the model)", mode="markers",
                   marker=dict(color=GREY, symbol="line-ew-open", size=22, line=dict(width=3)),
                   hovertemplate="%{x}: %{y:.3f}<extra>temperature 1</extra>"),
    ])
    fig.update_xaxes(title_text=f"the {len(order)} most likely next characters", type="category")
    # From 0 to at least 0.2: flat distributions stay readable, and a sharpening one shows its rise.
    fig.update_yaxes(title_text="probability", range=[0, max(0.2, 1.1 * float(max(scaled.max(), plain.max())))])
    fig = finish(fig, f"Next character after “{visible(after[-12:])}”")
    return fig.update_layout(legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", xanchor="left"),
                             margin=dict(t=80))
