"""The lines view of one attention head (BertViz's "head view"): an AttentionTrace in, a plotly
Figure out. No streamlit here.

Queries (the tokens that ask) stand in a column on the left, keys (the tokens looked at) in a
column on the right, t = 0 at the top as in the maps; a line joins query i to key j, the darker
and wider the larger weights[i, j]. A weight of exactly 0 (a causal mask's future, padding)
draws no line, so "masked" reads as "nothing there".

One trace per line would be T^2 traces (4,096 at T = 64); the lines are grouped into a few bins
of weight instead, one scatter trace per bin with None between its lines, each bin drawn with the
opacity and width of its upper edge. The exact weight of each
line is in its hover, on an invisible point a quarter of the way along it (at the middle, the
points of (i, j) and (i + 1, j - 1) would fall on one spot).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.attention import MAX_TICKS, checked_tokens, map_height, weights_of
from app.charts.style import BLUE, GREY, VERMILLION, WIDTH_ENCODES, finish
from engine import AttentionTrace

# Queries whose lines are drawn at once: as many as have their token as a label (60); past that, the
# first 60 (or the one picked). Measured in chromium on this 2-core machine: a causal head's first 60
# rows (1,830 lines) draw in 0.14 s, an encoder's (3,600) in 0.23 s; every line of 128 causal rows
# took 0.58 s, of 512 (131,328 lines, 18 MB) 9.7 s, and read as one blue block.
LINES_UP_TO = MAX_TICKS
EDGES = (0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)  # the bins of weight: (EDGES[b], EDGES[b + 1]]
HOVER_AT = 0.25  # where along a line (0: at the query, 1: at the key) its hover point sits
QUERY_HEADER = "query<br>(the token<br>that asks)"  # short lines: centred on a column, the margin holds
KEY_HEADER = "key<br>(the token<br>looked at)"  # half of one, in presentation mode's 15 px type too


def drawn_rows(T_q: int, query: int | None) -> range:
    """The queries whose lines are drawn: the one highlighted, else every one up to LINES_UP_TO."""
    if query is not None:
        if not 0 <= query < T_q:
            raise ValueError(f"query must be 0..{T_q - 1} (there are {T_q} queries) or None, got {query}")
        return range(query, query + 1)
    return range(min(T_q, LINES_UP_TO))


def lines_of(z: np.ndarray, rows: range) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, weight) of every line: each entry of the drawn rows of z [T_q, T_k] that is not 0."""
    i, j = np.nonzero(z[rows.start : rows.stop])  # each [lines]
    i = i + rows.start
    return i, j, z[i, j]


def bin_trace(i: np.ndarray, j: np.ndarray, upper: float, name: str) -> go.Scatter:
    """The lines of one bin as one trace: (0, i) to (1, j), a None between lines."""
    n = len(i)
    x = np.tile(np.array([0.0, 1.0, np.nan]), n)  # [3 n]
    y = np.stack([i, j, np.full(n, np.nan)], axis=1).reshape(-1).astype(float)  # [3 n]
    return go.Scatter(x=x, y=y, mode="lines", name=name, hoverinfo="skip", showlegend=False,
                      opacity=max(upper, 0.05),  # a weight under 0.02 is still there, faintly
                      line=dict(color=BLUE, width=0.6 + 3.4 * upper),
                      meta={WIDTH_ENCODES: "weight"})  # presentation mode keeps its width (style.for_projector)


def hover_points(i: np.ndarray, j: np.ndarray, w: np.ndarray, query: list[str], key: list[str]) -> go.Scatter:
    """One invisible point on each line, HOVER_AT of the way from its query: its tokens and weight."""
    data = np.empty((len(i), 5), dtype=object)  # [lines, 5] i, j, their tokens, the weight
    data[:, 0], data[:, 1] = i.tolist(), j.tolist()
    data[:, 2] = np.array(query, dtype=object)[i]
    data[:, 3] = np.array(key, dtype=object)[j]
    data[:, 4] = w.astype(np.float64)
    return go.Scatter(
        x=np.full(len(i), HOVER_AT), y=(i + HOVER_AT * (j - i)).astype(float), mode="markers", name="weights",
        showlegend=False, marker=dict(size=8, color="rgba(0,0,0,0)"), customdata=data,
        hovertemplate="query %{customdata[0]} (%{customdata[2]}) → key %{customdata[1]} (%{customdata[3]})"
                      "<br>weight = %{customdata[4]:.6g}<extra></extra>")


def token_column(x: float, count: int, tokens: list[str], what: str, yaxis: str) -> go.Scatter:
    """Where a column's tokens sit, on its own y axis (the left one ticks the queries, the right
    one the keys): a small grey dot each (a masked key has one and no line) while each has its
    label, else one thin line (512 dots 1 px apart drew a black bar)."""
    if count > MAX_TICKS:
        return go.Scatter(x=[x, x], y=[0, count - 1], mode="lines", name=what, showlegend=False, yaxis=yaxis,
                          line=dict(color=GREY, width=1), hoverinfo="skip")
    return go.Scatter(x=np.full(count, x), y=np.arange(count), mode="markers", name=what, showlegend=False, yaxis=yaxis,
                      marker=dict(size=5, color=GREY), customdata=np.array(tokens, dtype=object),
                      hovertemplate=f"{what} %{{y}}: %{{customdata}}<extra></extra>")


def column_ticks(tokens: list[str], highlighted: int | None) -> dict:
    """A column's tokens as the ticks of its y axis (positions beyond MAX_TICKS of them), the
    highlighted one bold."""
    if len(tokens) > MAX_TICKS:
        return {}
    text = [f"<b>{tok}</b>" if t == highlighted else tok for t, tok in enumerate(tokens)]
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=text,
                tickfont=dict(size=12 if len(tokens) <= 30 else 9))


def attention_lines(trace: AttentionTrace, head: int | None, query_tokens: list[str],
                    key_tokens: list[str] | None = None, query: int | None = None) -> go.Figure:
    """Lines from each query (left) to each key (right) of one head (head None: the mean of its
    heads), as dark and wide as the weight; every line's hover gives exactly weights[i, j].

    key_tokens  default to query_tokens (self-attention); a cross-attention's keys are the source
    query      the one query whose lines are drawn (its token bold, a vermillion dot); None: every
               query's, up to LINES_UP_TO of them (past that, the first LINES_UP_TO)
    """
    T_q, T_k = trace.weights.shape[1:]
    q_tokens = checked_tokens(query_tokens, T_q, "query_tokens")
    k_tokens = checked_tokens(query_tokens if key_tokens is None else key_tokens, T_k, "key_tokens")
    z = weights_of(trace, head)  # [T_q, T_k]
    rows = drawn_rows(T_q, query)
    i, j, w = lines_of(z, rows)  # each [lines]
    bins = np.digitize(w, EDGES, right=True) - 1  # [lines] bin b holds (EDGES[b], EDGES[b + 1]]
    fig = go.Figure()
    for b in range(len(EDGES) - 1):
        inside = bins == b
        if inside.any():
            fig.add_trace(bin_trace(i[inside], j[inside], EDGES[b + 1], f"weight {EDGES[b]:g} to {EDGES[b + 1]:g}"))
    fig.add_trace(token_column(0.0, T_q, q_tokens, "query", "y"))
    fig.add_trace(token_column(1.0, T_k, k_tokens, "key", "y2"))
    if query is not None:
        fig.add_trace(go.Scatter(x=[0.0], y=[query], mode="markers", name="highlighted query", showlegend=False,
                                 marker=dict(size=10, color=VERMILLION), hoverinfo="skip"))
    fig.add_trace(hover_points(i, j, w, q_tokens, k_tokens))
    span = [max(T_q, T_k) - 0.5, -0.5]  # both columns on one scale, t = 0 at the top
    fig.update_layout(
        showlegend=False, hovermode="closest",
        xaxis=dict(range=[-0.02, 1.02], visible=False, fixedrange=True),
        yaxis=dict(range=span, showgrid=False, zeroline=False, automargin=True, ticks="",
                   **column_ticks(q_tokens, query)),
        yaxis2=dict(range=span, overlaying="y", side="right", showgrid=False, zeroline=False, automargin=True,
                    ticks="", **column_ticks(k_tokens, None)),
    )
    for x, text in ((0.0, QUERY_HEADER), (1.0, KEY_HEADER)):  # centred on the columns: side by side in 330 px
        fig.add_annotation(x=x, xref="paper", xanchor="center", y=1.0, yref="paper", yanchor="bottom", yshift=6,
                           text=text, showarrow=False, font=dict(size=12, color=GREY))
    which = f"mean of {trace.weights.shape[0]} heads" if head is None else f"head {head}"
    fig = finish(fig, f"Who looks at whom: {trace.site.label}, {which}", height=map_height(max(T_q, T_k)) + 40)
    said = subtitle(T_q, query)
    # The title hangs 18 px from the top (plotly centres it in the margin, where it sat on the
    # column headers; its pad was not applied): title, subtitle, then the headers, each below the last.
    height = fig.layout.height
    return fig.update_layout(title=dict(yref="container", y=1 - 18 / height, yanchor="top"),
                             title_subtitle=dict(text=said, font=dict(size=12)),
                             margin=dict(t=124 + 16 * said.count("<br>"), r=65))


def subtitle(T_q: int, query: int | None) -> str:
    """What the lines say, a line at a time (the figure may be a third of a 1024 px page)."""
    said = "darker, wider line: more weight<br>no line: weight exactly 0"
    if query is None and T_q > LINES_UP_TO:
        return f"{said}<br>the lines of the first {LINES_UP_TO} of {T_q} queries"
    return said
