"""Beam search (engine/beam.py) as a tree: every prefix the beam kept is a node, joined to the
prefix it extends, with its token and its cumulative log-probability log p(y_1..y_t | x); the
hypothesis the search returns is drawn in vermillion from <sos> to its end; with the source's
tokens, a node's hover says where its decoder looked most to write its token (its attention row,
Candidate.attention; beam_rows.py draws the whole rows of one step). No streamlit here.

Leaves are stacked best first and each node sits at the middle of its children, so no two
edges cross: a glance shows where hypotheses split and which branches the beam dropped.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.labels import visible
from app.charts.style import (
    BLUE,
    GREY,
    HEIGHT,
    LEGEND_ROW,
    PAGE_CHARS,
    PAGE_PLOT,
    UNDER_AXIS,
    VERMILLION,
    finish,
    legend_below,
    wrap_title,
)
from engine import Beam, Candidate
from engine.seq2seq import EOS

ROOT = Candidate((), 0.0)  # <sos>: nothing written, log p = 0
# px a row of hypotheses gets, over the margins': a node's two lines of text (token, log p) stand in
# the gap above it. Three rows at the height's floor had 35 px, and each row's text lay on the line above.
ROW, TOP = 48, 1.0  # px a row; the y axis's top, in rows above the best hypothesis
TITLE_ROOM = 75  # px over the plot: the title and its subtitle
TITLE_TOKENS = 12  # of the returned hypothesis, in the title: an untrained translator's 31 took six lines
UNDER = UNDER_AXIS + LEGEND_ROW + 5  # px under it (as legend_below leaves): the x axis's title, then the legend


def children_of(beam: Beam) -> dict[tuple[int, ...], list[Candidate]]:
    """Each kept prefix's extensions that the beam kept, best first."""
    children: dict[tuple[int, ...], list[Candidate]] = {}
    for step in beam.steps:
        for candidate in step:
            children.setdefault(candidate.tokens[:-1], []).append(candidate)
    return {prefix: sorted(kids, key=lambda c: -c.score) for prefix, kids in children.items()}


def tree_layout(children: dict[tuple[int, ...], list[Candidate]]) -> dict[tuple[int, ...], float]:
    """y of every node: leaves 0, -1, -2, ... in depth-first order (best child first), each
    inner node at the mean of its children's."""
    ys: dict[tuple[int, ...], float] = {}
    leaves = iter(range(0, -10**6, -1))

    def place(node: Candidate) -> float:
        kids = children.get(node.tokens, [])
        ys[node.tokens] = float(np.mean([place(k) for k in kids])) if kids else float(next(leaves))
        return ys[node.tokens]

    place(ROOT)
    return ys


def edges(nodes: list[Candidate], ys: dict[tuple[int, ...], float]) -> tuple[list, list]:
    """x and y of lines from each node to its parent, None between lines (one trace for all)."""
    x, y = [], []
    for node in nodes:
        x += [len(node.tokens) - 1, len(node.tokens), None]
        y += [ys[node.tokens[:-1]], ys[node.tokens], None]
    return x, y


def looked_most(node: Candidate, source: list[str] | None) -> str:
    """Hover text: the source token the node's decoder looked at most to write its token (head 0,
    as the maps), and that weight; "" without the source's tokens or attention, and at the root."""
    if source is None or node.attention is None or not node.tokens:
        return ""
    row = node.attention[-1, 0]  # [S_k]: the row of the step that wrote the node's token
    i = int(row.argmax())
    return f"<br>to write it, looked most at {visible(source[i])} (α = {row[i].item():.3f})"


def beam_tree(beam: Beam, vocab: tuple[str, ...], source: list[str] | None = None) -> go.Figure:
    """The beam as a tree: x is how many tokens are written, y orders the hypotheses (best at the
    top). Each node reads "token · log p"; the hover adds the whole prefix and p. Squares end with
    <eos> (finished hypotheses); the returned one, beam.best, is the vermillion path.

    vocab   the text of each target token (task.target_vocab), <sos> and <eos> included
    source  the text of every key the decoder attends to (padding included): the hover then names
            the one each node's decoder looked at most; None: it does not
    """
    children = children_of(beam)
    ys = tree_layout(children)
    nodes = [c for step in beam.steps for c in step]  # every kept prefix, root excluded
    best = beam.best.tokens
    on_best = {best[:k] for k in range(len(best) + 1)}
    fig = go.Figure()
    for chosen, colour, width in ((False, GREY, 1.5), (True, VERMILLION, 3.5)):
        x, y = edges([n for n in nodes if (n.tokens in on_best) == chosen], ys)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color=colour, width=width), hoverinfo="skip",
                                   name="the returned hypothesis" if chosen else "other kept prefixes"))
    everything = [ROOT, *nodes]
    words = ["<sos>" if not n.tokens else vocab[n.tokens[-1]] for n in everything]
    prefixes = [" ".join(visible(vocab[t]) for t in n.tokens) or "(nothing yet)" for n in everything]
    scores = np.array([n.score for n in everything], dtype=np.float64)  # [nodes]
    decimals = fitting_decimals(scores, len(beam.steps))
    fig.add_trace(go.Scatter(
        x=[len(n.tokens) for n in everything], y=[ys[n.tokens] for n in everything], mode="markers+text",
        # token over log p, one above the other: side by side they ran into the next node at 1024 px
        text=[f"{visible(fitting_token(w, len(beam.steps)))}<br>{s:.{decimals}f}" if n.tokens else "&lt;sos&gt;"
              for w, s, n in zip(words, scores, everything)],
        textposition="top center", textfont=dict(size=12), cliponaxis=False,  # the top row's labels over the edge
        marker=dict(size=11, symbol=["square" if n.tokens[-1:] == (EOS,) else "circle" for n in everything],
                    color=[VERMILLION if n.tokens in on_best else BLUE for n in everything],
                    line=dict(color="white", width=1)),
        customdata=np.stack([np.array(prefixes, dtype=object), scores, np.exp(scores),
                             np.array([looked_most(n, source) for n in everything], dtype=object)], axis=1),
        showlegend=False,
        hovertemplate="written: %{customdata[0]}<br>log p = %{customdata[1]:.6g}<br>p = %{customdata[2]:.4g}"
                      "%{customdata[3]}<extra></extra>",
    ))
    return style_tree(fig, beam, vocab, ys)


def fitting_decimals(scores: np.ndarray, depth: int) -> int:
    """Decimals of log p in the nodes' labels: 2 where they fit the width a step has on a page at
    1024 px (12 px type, about 7 px a character), fewer where not: a date's 11 steps have 40 px
    each, and "-26.74" ran into the next step's label (the hover keeps every digit)."""
    per_step = PAGE_PLOT / (depth + 1)  # the x axis spans depth + 1 steps
    worst = float(np.max(np.abs(scores), initial=0.0))
    return next((d for d in (2, 1) if 0.6 * 12 * len(f"-{worst:.{d}f}") <= per_step), 0)


def fitting_token(token: str, depth: int) -> str:
    """A node's token (as the vocabulary writes it: cut before it is escaped, so "<unk>" is never cut inside
    "&lt;") cut to the width its step has on a page at 1024 px (12 px type, about 7 px a character), an ellipsis
    for the rest (the hover keeps it whole): an untrained translator's 31 steps have 28 px each, and its words ran
    into each other and past the figure's right edge."""
    chars = max(3, int(PAGE_PLOT / (depth + 1) / 7))
    return token if len(token) <= chars else token[: chars - 1] + "…"


def style_tree(fig: go.Figure, beam: Beam, vocab: tuple[str, ...], ys: dict[tuple[int, ...], float]) -> go.Figure:
    depth = len(beam.steps)
    fig.update_xaxes(title_text="tokens written (decoding step)", tickmode="array", tickvals=list(range(depth + 1)),
                     range=[-0.4, depth + 0.6], zeroline=False)
    fig.update_yaxes(title_text="hypotheses, best first", showticklabels=False, zeroline=False, showgrid=False,
                     range=[min(ys.values()) - 0.6, TOP])
    best = beam.best
    tokens = [visible(vocab[t]) for t in best.tokens]
    # the title names the first TITLE_TOKENS tokens it returns: a model's page writes them all under the figure
    written = " ".join(tokens[:TITLE_TOKENS]) + (f" … ({len(tokens)} tokens)" if len(tokens) > TITLE_TOKENS else "")
    kept = max(len(step) for step in beam.steps)
    fig = finish(fig, f"Beam search keeping {kept}: returns '{written}', log p = {best.score:.3f}",
                 height=max(HEIGHT, int(TITLE_ROOM + UNDER + ROW * (TOP + 0.6 - min(ys.values())))))
    fig.update_layout(title_subtitle=dict(
        text="each node: its token over log p(everything written so far | source); a square ends with &lt;eos&gt;",
        font=dict(size=12)), margin=dict(t=TITLE_ROOM))
    fig = legend_below(fig)  # at y = -0.3 of the plot it fell 180 px under a tall tree's axis title
    return wrap_title(fig, chars=PAGE_CHARS)  # the best hypothesis of a date ran past the figure's edge
