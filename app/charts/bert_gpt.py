"""The BERT and GPT page's figures: the two runs' held-out accuracy over training, each model's guess
for a masked word, both models' attention over one sentence, and one word's cosine across two
sentences layer by layer."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts import attention, runs
from app.charts.architectures import legend_under
from app.charts.log_lines import empty_or
from app.charts.style import GREY, finish

GUESS_HEIGHT = 320  # px: ten bars with readable words


def accuracy_over_training(log: pd.DataFrame, baselines: dict[str, float], colours: dict[str, str]) -> go.Figure:
    """Held-out accuracy of each run against the step, each run's baseline (always its most frequent
    word) dashed in the run's colour."""
    log = empty_or(log, ["run", "step", "metric"])
    fig = runs.over_training(log, "metric", "held-out accuracy", colours, y_format=".1%")
    last = max(10, int(log["step"].max()) if len(log) else 0)
    for run, value in baselines.items():
        name = f"{run.split(' ')[0]}: always 'the'"
        fig.add_trace(go.Scatter(x=[0, last], y=[value, value], name=name, mode="lines",
                                 line=dict(color=colours[run], dash="dash", width=1.2),
                                 hovertemplate=f"{name} {value:.1%}<extra></extra>"))
    fig.update_yaxes(title_text="held-out accuracy", tickformat=".0%", rangemode="tozero")
    return legend_under(finish(fig, "Held-out accuracy: masked words (BERT), next words (GPT)"))


def guesses(top: list[tuple[str, float]], colour: str, title: str) -> go.Figure:
    """A model's most probable words for the mask, most probable at the top, as bars of their probability."""
    words = [word for word, _ in top][::-1]
    probs = [p for _, p in top][::-1]
    fig = go.Figure(go.Bar(x=probs, y=words, orientation="h", marker_color=colour,
                           text=[f"{p:.1%}" for p in probs], textposition="outside", cliponaxis=False,
                           hovertemplate="%{y}: %{x:.2%}<extra></extra>"))
    fig.update_xaxes(title_text="probability at the mask", tickformat=".0%",
                     range=[0, max([*probs, 0.01]) * 1.25])
    fig.update_yaxes(title_text="word", type="category")
    return finish(fig, title, height=GUESS_HEIGHT)


def cosines(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """The word's cosine across the two sentences at each layer, a line per model (frame: model,
    layer, cosine), the static vector's flat at 1."""
    fig = go.Figure()
    for model, rows in frame.groupby("model", sort=False):
        static = model not in colours
        fig.add_trace(go.Scatter(x=rows["layer"], y=rows["cosine"], name=model, mode="lines+markers",
                                 line=dict(color=GREY if static else colours[model], dash="dot" if static else None,
                                           width=5 if static else 2),  # wider: seen under a model's line at 1
                                 marker=dict(size=12 if static else 8),
                                 hovertemplate=f"{model}<br>%{{x}}: cosine %{{y:.4f}}<extra></extra>"))
    # zoomed to the cosines: after a few hundred steps they differ from 1 in the second decimal, which an axis
    # from 0 would draw as one flat line; yet spanning at least 0.05, or 0.992 drew as a plunge from 1
    low = float(frame["cosine"].min()) if len(frame) else 0.0
    span = max(1.0 - low, 0.05)
    fig.update_yaxes(title_text="cosine of its two vectors", range=[low - 0.15 * span, 1 + 0.08 * span])
    fig.update_xaxes(title_text="layer read (the embedding, then each block's output)", type="category")
    return legend_under(finish(fig, "The word's two vectors, layer by layer"))


def attention_pair(traces: dict[str, dict], tokens: list[str], average: bool) -> go.Figure:
    """Both models' self-attention over one sentence in one figure on one colour scale: a row per
    layer, the masked model's map(s) on the left and the causal model's on the right (each layer's
    mean of heads, or every head). `traces`: model name -> {Site: AttentionTrace}. A causal map's
    masked cells (its upper triangle, weight exactly 0) are greyed over."""
    names = list(traces)
    layers = [sorted(sites, key=lambda s: s.layer) for sites in traces.values()]
    heads = next(iter(traces[names[0]].values())).weights.shape[0]
    shown_heads = [None] if average else list(range(heads))
    columns = [(name, head) for name in names for head in shown_heads]
    if average:
        titles = [f"{name.split()[0]} · block {site.layer} · mean of heads" for row in range(len(layers[0]))
                  for name, _ in columns for site in [layers[names.index(name)][row]]]
    else:  # a panel a head is too narrow for "masked · block 0 · head 0" (16 titles over each other at 1024 px):
        # each panel says its head; each row's layer is on its y axis, each model's name over its half
        titles = [f"head {head}" for _ in layers[0] for _, head in columns]
    firsts = [1] if average else [1 + k * heads for k in range(len(names))]  # a model's first column
    fig = make_subplots(rows=len(layers[0]), cols=len(columns), shared_xaxes=True, shared_yaxes=True,
                        horizontal_spacing=0.03 if average else 0.015, vertical_spacing=0.12,
                        subplot_titles=titles)
    words = attention.shown(tokens)
    for row in range(len(layers[0])):
        for col, (name, head) in enumerate(columns, start=1):
            trace = traces[name][layers[names.index(name)][row]]
            fig.add_trace(attention.weights_heatmap(attention.weights_of(trace, head), words, words,
                                                    ("query", "key", "weight")), row=row + 1, col=col)
            overlay = attention.mask_overlay(attention.masked_of(trace))
            if overlay is not None:
                fig.add_trace(overlay, row=row + 1, col=col)
        attention.token_ticks(fig, "y", words, attention.GRID_TICKS, row=row + 1, col=1)
    fig.update_yaxes(autorange="reversed", showline=True, mirror=True, linecolor=GREY)
    fig.update_xaxes(showline=True, mirror=True, linecolor=GREY)
    for col in range(1, len(columns) + 1):
        if average:
            attention.token_ticks(fig, "x", words, attention.GRID_TICKS, row=len(layers[0]), col=col)
            fig.update_xaxes(title_text="key (looked at)", row=len(layers[0]), col=col)
        else:  # a head's panel is too narrow for the words under it: the rows name them, in the same order
            fig.update_xaxes(showticklabels=False, row=len(layers[0]), col=col)
            if col in firsts:
                fig.update_xaxes(title_text="key: the same words →", row=len(layers[0]), col=col)
    if average:
        fig.update_yaxes(title_text="query (asks)", col=1)
    else:
        for row, site in enumerate(layers[0], start=1):
            fig.update_yaxes(title_text=f"block {site.layer}: query", row=row, col=1)
    fig.update_layout(coloraxis=attention.weight_axis("weight"))
    fig.update_annotations(font=dict(size=12), yshift=4)  # the panels' titles
    if not average:
        for name, first in zip(names, firsts):
            domain = fig.layout[f"xaxis{'' if first == 1 else first}"].domain[0], \
                fig.layout[f"xaxis{first + heads - 1}"].domain[1]
            fig.add_annotation(text=f"<b>{name}</b>", x=sum(domain) / 2, xref="paper", y=1.0, yref="paper",
                               xanchor="center", yanchor="bottom", yshift=28, showarrow=False,
                               font=dict(size=13))  # over its heads
    which = "mean of heads" if average else f"all {heads} heads"
    fig = finish(fig, f"Self-attention: masked (left), causal (right), {which}", height=110 + 230 * len(layers[0]))
    # the note's line, then the panels' titles under it (and every head's model names between the two)
    return attention.with_note(fig, True, room=115 if average else 150)


def self_similarity(frame: pd.DataFrame, colours: dict[str, str]) -> go.Figure:
    """Each model's self-similarity (Ethayarajh 2019) at each layer (frame: model, layer, same,
    random, adjusted), the hover giving the two cosines it is the difference of."""
    fig = go.Figure()
    for model, rows in frame.groupby("model", sort=False):
        fig.add_trace(go.Scatter(x=rows["layer"], y=rows["adjusted"], name=model, mode="lines+markers",
                                 line=dict(color=colours[model], width=2), marker=dict(size=8),
                                 customdata=rows[["same", "random"]].to_numpy(),
                                 hovertemplate=f"{model}<br>%{{x}}: %{{y:.3f}}<br>one word, two sentences "
                                               "%{customdata[0]:.3f}<br>two different words %{customdata[1]:.3f}"
                                               "<extra></extra>"))
    fig.update_yaxes(title_text="self-similarity", range=[min(0.0, float(frame["adjusted"].min()) - 0.05), 1.05])
    fig.update_xaxes(title_text="layer read (the embedding, then each block's output)", type="category")
    return legend_under(finish(fig, "How alike a word stays across sentences, layer by layer"))
