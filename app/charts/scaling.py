"""Why a transformer divides its scores by sqrt(d_k): one query's logits before and after, the
softmax of each, and the softmax's entropy per query. No streamlit here.

The dot product q.k of two vectors with d_k independent components of variance 1 has variance
d_k: the wider the head, the larger the scores, and a softmax of large scores puts nearly all
its weight on one key, where its gradient is nearly 0 (the course: "scales down the similarity
score so that it is less likely to saturate the softmax function, which would lead to tiny
gradients"). A recording's logits are already divided by sqrt(d_k); times sqrt(d_k) they are the
raw Q K^T the head would have used unscaled.
"""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor

from app.charts.labels import visible
from app.charts.style import BLUE, GREY, ORANGE, finish
from engine import AttentionTrace
from engine.multihead import softmax_entropy

BEFORE, AFTER = "QK<sup>T</sup> (not scaled)", "QK<sup>T</sup>/√d<sub>k</sub> (what the head uses)"


def d_k_of(trace: AttentionTrace) -> int:
    """The width of a head's queries and keys: a transformer's heads have d_v = d_k = d_model / heads."""
    return int(trace.context.shape[-1])


def unscaled(logits: Tensor, d_k: int) -> Tensor:
    """Q K^T from the recorded Q K^T / sqrt(d_k); a masked -inf stays -inf."""
    return logits.double() * math.sqrt(d_k)


def finite(values: Tensor) -> np.ndarray:
    """float32 with a masked -inf as NaN, which a bar chart leaves out (JSON has no -inf)."""
    out = values.float().numpy().astype(np.float32)
    return np.where(np.isfinite(out), out, np.float32(np.nan))


def checked(trace: AttentionTrace, head: int, query: int) -> None:
    heads, T_q, _ = trace.weights.shape
    if not (0 <= head < heads and 0 <= query < T_q):
        raise ValueError(f"head must be 0..{heads - 1} and query 0..{T_q - 1}; got head {head}, query {query}")


def scaled_logits(trace: AttentionTrace, head: int, query: int, key_tokens: list[str]) -> go.Figure:
    """One head's scores for one query over every key, before (Q K^T) and after dividing by
    sqrt(d_k) (left), and the softmax of each (right): the one the head uses is exactly its
    recorded weights; the unscaled one is sharper. Masked keys have no bar.

    trace       a transformer's attention (rec.attention_traces[site]); its logits are scaled
    key_tokens  the T_k keys as text (self-attention: the input; cross: the source)
    """
    checked(trace, head, query)
    d_k, T_k = d_k_of(trace), trace.weights.shape[2]
    if len(key_tokens) != T_k:
        raise ValueError(f"key_tokens: one per key, {T_k} of them; got {len(key_tokens)}")
    after = trace.logits[head, query]  # [T_k]
    before = unscaled(after, d_k)  # [T_k]
    probabilities = {BEFORE: torch.softmax(before, dim=-1), AFTER: trace.weights[head, query].double()}  # each [T_k]
    names = np.array([visible(tok) for tok in key_tokens], dtype=object)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=[
        "scores", "softmax of the scores: the weights"])
    for name, colour, scores in ((BEFORE, ORANGE, before), (AFTER, BLUE, after)):
        fig.add_trace(go.Bar(x=np.arange(T_k), y=finite(scores), name=name, marker_color=colour, customdata=names,
                             legendgroup=name, hovertemplate=f"key %{{x}} (%{{customdata}})<br>{name}: %{{y:.6g}}"
                                                             "<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Bar(x=np.arange(T_k), y=finite(probabilities[name]), name=name, marker_color=colour,
                             customdata=names, legendgroup=name, showlegend=False,
                             hovertemplate="key %{x} (%{customdata})<br>weight %{y:.6g}<extra></extra>"), row=1, col=2)
    if T_k <= 60:
        fig.update_xaxes(tickmode="array", tickvals=list(range(T_k)), ticktext=list(names), tickangle=0)
    fig.update_xaxes(title_text="key (looked at)")
    fig.update_yaxes(title_text="score", row=1, col=1)
    fig.update_yaxes(title_text="softmax weight", range=[0, 1.05], row=1, col=2)
    fig.update_annotations(font=dict(size=12))
    fig = finish(fig, f"Why divide by √d<sub>k</sub> = √{d_k} = {math.sqrt(d_k):.3g}: "
                      f"{trace.site.label}, head {head}, query {query}")
    return fig.update_layout(barmode="group", legend=dict(orientation="h", x=0, y=-0.25, yanchor="top"),
                             margin=dict(b=85))


def row_entropy(trace: AttentionTrace, head: int, query_tokens: list[str] | None = None) -> go.Figure:
    """The entropy of each query's softmax, as the head computes it (scaled: its recorded weights)
    and as it would without the scaling, with the most it can be, log(keys it may see) (a
    uniform look). Low entropy: the softmax is saturated, nearly one-hot."""
    checked(trace, head, 0)
    d_k, T_q = d_k_of(trace), trace.weights.shape[1]
    if query_tokens is not None and len(query_tokens) != T_q:
        raise ValueError(f"query_tokens: one per query, {T_q} of them; got {len(query_tokens)}")
    logits = trace.logits[head]  # [T_q, T_k]
    visible_keys = torch.isfinite(logits).sum(dim=-1).double()  # [T_q]
    rows = {BEFORE: softmax_entropy(unscaled(logits, d_k)).numpy(),
            AFTER: softmax_entropy(logits.double()).numpy()}  # each [T_q]
    queries = np.arange(T_q)
    fig = go.Figure()
    for name, colour in ((BEFORE, ORANGE), (AFTER, BLUE)):
        fig.add_trace(go.Scatter(x=queries, y=rows[name].astype(np.float32), name=f"softmax({name})",
                                 mode="lines+markers", line=dict(color=colour, width=2.2),
                                 hovertemplate="query %{x}<br>entropy %{y:.6g} nats<extra></extra>"))
    fig.add_trace(go.Scatter(x=queries, y=torch.log(visible_keys).numpy().astype(np.float32),
                             name="most it can be: log(keys it may see)", mode="lines",
                             line=dict(color=GREY, width=1.5, dash="dot"),
                             hovertemplate="query %{x}<br>log(keys) = %{y:.6g} nats<extra></extra>"))
    if query_tokens is not None and T_q <= 60:
        fig.update_xaxes(tickmode="array", tickvals=list(queries), ticktext=[visible(t) for t in query_tokens],
                         tickangle=0)
    fig.update_xaxes(title_text="query (the token that asks)")
    fig.update_yaxes(title_text="entropy of the weights, nats", rangemode="tozero")
    fig = finish(fig, f"Softmax entropy per query, with and without √d<sub>k</sub>: {trace.site.label}, head {head}")
    return fig.update_layout(legend=dict(orientation="h", x=0, y=-0.25, yanchor="top"), margin=dict(b=85))
