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
    fig = scatter(coords, words, counts, marked)
    fig.update_xaxes(title_text=f"first principal component ({explained[0]:.0%} of the variance)")
    fig.update_yaxes(title_text=f"second ({explained[1]:.0%})")
    return finish(fig, f"{len(words):,} words projected to 2-D (PCA of their vectors)", height=520)


def tsne_map(coords: np.ndarray, words: list[str], counts: np.ndarray, step: int, marked: list[str] = ()
             ) -> go.Figure:
    """Words on their t-SNE map ([n, 2]) of the vectors at training step `step`: its axes have no
    meaning of their own (only who lies near whom), so they are titled as such."""
    fig = scatter(coords, words, counts, marked)
    fig.update_xaxes(title_text="t-SNE map, across (no unit: only nearness counts)", showticklabels=False)
    fig.update_yaxes(title_text="t-SNE map, up", showticklabels=False)
    return finish(fig, f"{len(words):,} words on a t-SNE map of their vectors at step {step:,}", height=520)


def scatter(coords: np.ndarray, words: list[str], counts: np.ndarray, marked: list[str]) -> go.Figure:
    """The words as points: `marked` ones in orange; the marked words (the looked-up word first) and
    the LABELLED most frequent named where their names find room (label_places), the others on hover."""
    marks = list(dict.fromkeys(marked))
    row = {w: k for k, w in enumerate(words)}
    frequent = np.argsort(-counts, kind="stable")[:LABELLED].tolist()  # most frequent first
    order = list(dict.fromkeys([row[w] for w in marks if w in row] + frequent))
    places = label_places(coords, [visible(words[k]) for k in order], order)
    named = sorted(places)
    colour = [ORANGE if w in set(marks) else BLUE for w in words]
    fig = go.Figure(go.Scatter(
        x=coords[:, 0], y=coords[:, 1], mode="markers", marker=dict(size=6, color=colour, opacity=0.75),
        customdata=np.stack([[visible(w) for w in words], counts], axis=1),
        hovertemplate="%{customdata[0]}<br>seen %{customdata[1]} times<extra></extra>", showlegend=False))
    # The names in a trace of their own, drawn over every point, with a halo of the background's
    # colour: drawn with their points, the next points' markers covered them
    fig.add_trace(go.Scatter(
        x=coords[named, 0], y=coords[named, 1], mode="text", text=[visible(words[k]) for k in named],
        textposition=[places[k] for k in named], textfont=dict(size=10, color=GREY, shadow="auto"),
        hoverinfo="skip", showlegend=False))
    fig.update_xaxes(zeroline=False)
    fig.update_yaxes(zeroline=False)
    return fig


# Where a point's name may stand, by plotly's textposition: the direction of the label's centre from the point.
PLACES = {"top center": (0, 1), "bottom center": (0, -1), "middle right": (1, 0), "middle left": (-1, 0),
          "top right": (1, 1), "top left": (-1, 1), "bottom right": (1, -1), "bottom left": (-1, -1)}
PLOT_PX = (440, 360)  # the plot's inner size at 1024 wide (the narrower screen the browser tests take), measured
CHAR_PX, LINE_PX = 6.0, 12.0  # a 10-pixel label's character width and line height
GAP_PX = 6.0  # from the point's centre to its label: the marker's radius (3) and plotly's padding
TOUCH_PX = 2.0  # two names' boxes may share this much (a box's edge is blank: the glyphs stand inside it)
SPACE_PX = 4.0  # kept clear on each side of a name: side by side, names without it read as one word


def label_places(coords: np.ndarray, names: list[str], rows: list[int]) -> dict[int, str]:
    """A textposition for each of `rows` (in that order: the first ones are surest of a place) whose
    name (`names`, one a row) clears every name placed before it, at the plot's size in pixels; a
    row with no room is left out (its point still names itself on hover). Greedy, as a map's
    labeller does: names that pile up on a crowded spot (a word and its neighbours) spread round it."""
    low, span = coords.min(0), np.maximum(np.ptp(coords, axis=0), 1e-12)  # [2], [2]
    pixels = (coords - low) / span * PLOT_PX  # [n, 2]
    boxes: list[tuple[float, float, float, float]] = []
    places = {}
    for row, name in zip(rows, names):
        width, height = CHAR_PX * len(name) + 2 * SPACE_PX, LINE_PX
        x, y = pixels[row]
        for place, (dx, dy) in PLACES.items():
            cx = x + dx * (width / 2 + GAP_PX) if dx else x
            cy = y + dy * (height / 2 + GAP_PX) if dy else y
            box = (cx - width / 2, cy - height / 2, cx + width / 2, cy + height / 2)
            if not any(box[0] < b[2] - TOUCH_PX and b[0] < box[2] - TOUCH_PX and box[1] < b[3] - TOUCH_PX
                       and b[1] < box[3] - TOUCH_PX for b in boxes):
                boxes.append(box)
                places[row] = place
                break
    return places


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
