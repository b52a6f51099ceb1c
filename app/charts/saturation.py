"""Figure builders for the Why √d_k page: random dot products against their width, and the two
runs' logs (with and without the division) over training. No Streamlit here."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from app.charts import runs
from app.charts.architectures import legend_under, level
from app.charts.style import BLUE, GREY, ORANGE, finish
from engine.multihead import softmax_entropy

COLOURS = {"divided by √d_k": BLUE, "not divided": ORANGE}  # the page's two runs, as in the theory figure
WIDTHS = tuple(2**k for k in range(10))  # d_k from 1 to 512 (Vaswani et al.'s d_model)
KEYS, ROWS = 10, 2000  # keys a row spreads its weight over (a reversal of 10), rows drawn per width


def random_scores(widths=WIDTHS, keys: int = KEYS, rows: int = ROWS, seed: int = 0) -> pd.DataFrame:
    """Vaswani et al.'s footnote, drawn: q and k with independent N(0, 1) components, so q·k has
    mean 0 and variance d_k. For each width, `rows` queries against `keys` keys: the standard
    deviation of the scores and the mean entropy (nats) of each row's softmax, with the scores as
    they are and divided by √d_k. Columns d_k, scores ("q·k" or "q·k / √d_k"), std, entropy."""
    generator = torch.Generator().manual_seed(seed)
    found = []
    for d_k in widths:
        q = torch.randn(rows, 1, d_k, generator=generator, dtype=torch.float64)  # [rows, 1, d_k]
        k = torch.randn(rows, keys, d_k, generator=generator, dtype=torch.float64)  # [rows, keys, d_k]
        scores = (q * k).sum(-1)  # [rows, keys]
        for name, z in (("q·k", scores), ("q·k / √d_k", scores / math.sqrt(d_k))):
            entropy = softmax_entropy(z)  # [rows]
            found.append({"d_k": d_k, "scores": name, "std": z.std().item(), "entropy": entropy.mean().item()})
    return pd.DataFrame(found)


def spread_by_width(frame: pd.DataFrame, keys: int = KEYS) -> go.Figure:
    """random_scores: left, the scores' standard deviation against d_k (log-log); right, the mean
    entropy of a row's softmax, with log(keys), a uniform row's, dashed."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=("spread of the scores", "entropy of a row's softmax"))
    colours = {"q·k": ORANGE, "q·k / √d_k": BLUE}
    for name, rows in frame.groupby("scores", sort=False):
        for col, column, what in ((1, "std", "standard deviation"), (2, "entropy", "entropy (nats)")):
            fig.add_trace(go.Scatter(
                x=rows["d_k"], y=rows[column], name=name, mode="lines+markers", legendgroup=name,
                showlegend=col == 1, line=dict(color=colours[name], width=2), marker=dict(size=6),
                hovertemplate=f"{name}<br>d_k %{{x}}<br>{what} %{{y:.3g}}<extra></extra>"), row=1, col=col)
    uniform = math.log(keys)
    fig.add_trace(go.Scatter(
        x=[frame["d_k"].min(), frame["d_k"].max()], y=[uniform, uniform], name=f"uniform row (log {keys})",
        mode="lines", line=dict(color=GREY, dash="dash"),
        hovertemplate=f"uniform over {keys} keys: {uniform:.3g} nats<extra></extra>"), row=1, col=2)
    fig.update_xaxes(type="log", title_text="d_k (width of a head)", tickvals=list(WIDTHS),
                     ticktext=list(map(str, WIDTHS)))
    spreads = [s for s in (1, 2, 4, 8, 16, 32, 64) if s <= 2 * frame["std"].max()]
    fig.update_yaxes(type="log", title_text="standard deviation", tickvals=spreads, ticktext=list(map(str, spreads)),
                     row=1, col=1)
    fig.update_yaxes(title_text="entropy (nats)", rangemode="tozero", row=1, col=2)
    fig = finish(fig, f"Random scores over {keys} keys, against the width of a head", height=340)
    return legend_under(fig)


def over_training(log: pd.DataFrame, column: str, y_title: str, log_y: bool) -> go.Figure:
    """One line per run of `column` against the training step, in the two runs' colours (runs.over_training)."""
    return runs.over_training(log, column, y_title, COLOURS, log_y)


def metric_over_training(log: pd.DataFrame, metric_name: str) -> go.Figure:
    fig = over_training(log, "metric", f"held-out {metric_name}", log_y=False)
    if metric_name == "accuracy":
        fig.update_yaxes(tickformat=".0%", range=[0, 1.02])
    return legend_under(finish(fig, f"Held-out {metric_name} of each run"))


def entropy_over_training(log: pd.DataFrame) -> go.Figure:
    """The runs' mean row entropy, and the uniform rows' (the same for both: the keys each row may
    see) dashed."""
    fig = over_training(log, "entropy", "mean entropy (nats)", log_y=False)
    if len(log):
        fig.add_trace(level(float(log["uniform_entropy"].iloc[0]), max(10, int(log["step"].max())), "uniform rows"))
    return legend_under(finish(fig, "Entropy of the attention rows"))


def gradient_over_training(log: pd.DataFrame) -> go.Figure:
    fig = over_training(log, "logit_grad_norm", "‖∂L/∂z‖ (log)", log_y=True)
    return legend_under(finish(fig, "Gradient reaching the scores z"))
