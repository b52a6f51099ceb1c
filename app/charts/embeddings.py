"""Figure builders for the Embeddings page: the same words one-hot and learned, a 2-D projection of a
vocabulary, and words placed along the axis between two. Vectors in, plotly figures out; every
number comes from engine/embeddings.py. No Streamlit here."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.labels import visible
from app.charts.style import BLUE, GREY, ORANGE, finish

LABELLED = 60  # words of a projection named on the plot (the most frequent); every point names itself on hover
COSINE_SCALE = [[0.0, "#b2182b"], [0.5, "#f7f7f7"], [1.0, "#2166ac"]]  # -1 red, 0 white, 1 blue


def one_hot_and_dense(words: list[str], learned: np.ndarray, vocabulary: int, dim: int) -> go.Figure:
    """The cosine of every pair of `words` as one-hot vectors (the identity: two different words
    are orthogonal, whatever they mean) beside the same pairs as learned vectors ([n, n])."""
    n = len(words)
    shown = [visible(w) for w in words]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, subplot_titles=(
        f"one-hot ({vocabulary:,} numbers)", f"learned ({dim} numbers)"))
    for col, z in ((1, np.eye(n)), (2, learned)):
        fig.add_trace(go.Heatmap(
            z=z.astype(np.float32), x=shown, y=shown, zmin=-1, zmax=1, colorscale=COSINE_SCALE,
            showscale=col == 2, colorbar=dict(title=dict(text="cosine", side="right"), thickness=12),
            texttemplate="%{z:.1f}", textfont=dict(size=9),
            hovertemplate="%{y} · %{x}<br>cosine %{z:.3f}<extra></extra>"), row=1, col=col)
        fig.update_yaxes(autorange="reversed", row=1, col=col)
    return finish(fig, "The same words: one-hot against learned vectors", height=380)


def projection(coords: np.ndarray, words: list[str], counts: np.ndarray, explained: np.ndarray,
               marked: list[str] = ()) -> go.Figure:
    """Words at their first two principal components ([n, 2]): the LABELLED most frequent named on
    the plot, `marked` (a word the student asked about and its neighbours) in orange."""
    order = np.argsort(-counts, kind="stable")  # most frequent first
    named = set(order[:LABELLED].tolist())
    marks = set(marked)
    colour = [ORANGE if w in marks else BLUE for w in words]
    text = [visible(w) if k in named or w in marks else "" for k, w in enumerate(words)]
    fig = go.Figure(go.Scatter(
        x=coords[:, 0], y=coords[:, 1], mode="markers+text", text=text, textposition="top center",
        textfont=dict(size=10, color=GREY), marker=dict(size=6, color=colour, opacity=0.75),
        customdata=np.stack([[visible(w) for w in words], counts], axis=1),
        hovertemplate="%{customdata[0]}<br>seen %{customdata[1]} times<extra></extra>", showlegend=False))
    fig.update_xaxes(title_text=f"first principal component ({explained[0]:.0%} of the variance)", zeroline=False)
    fig.update_yaxes(title_text=f"second ({explained[1]:.0%})", zeroline=False)
    return finish(fig, f"{len(words):,} words projected to 2-D (PCA of their vectors)", height=520)


def along_axis(positions: np.ndarray, words: list[str], a: str, b: str) -> go.Figure:
    """Each word's place on the axis from `a` (0) to `b` (1): a horizontal bar per word, sorted."""
    order = np.argsort(positions)
    fig = go.Figure(go.Bar(
        x=positions[order].astype(np.float32), y=[visible(words[k]) for k in order], orientation="h",
        marker_color=[ORANGE if p > 0.5 else BLUE for p in positions[order]], showlegend=False,
        hovertemplate="%{y}: %{x:.3f}<extra></extra>"))
    for value, word in ((0, a), (1, b)):
        fig.add_vline(x=value, line=dict(color=GREY, dash="dot", width=1.5))
        fig.add_annotation(x=value, y=1, yref="y domain", text=visible(word), showarrow=False, yanchor="bottom",
                           font=dict(color=GREY, size=11))
    fig.update_xaxes(title_text=f"position from '{visible(a)}' (0) to '{visible(b)}' (1)")
    fig.update_yaxes(title_text="word", automargin=True)
    return finish(fig, f"Words along the axis {visible(a)} → {visible(b)}", height=max(260, 22 * len(words) + 120))
