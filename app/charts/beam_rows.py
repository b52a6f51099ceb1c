"""Where each hypothesis of a beam looks (engine/beam.py: Candidate.attention) at one output
step t: the hypotheses the beam kept at step t down, in the order its tree draws them, the
source's tokens across, the weights on the alignment maps' scale. No streamlit here.

A hypothesis's row at step t is where its decoder looked to write its token t, having read its
own tokens before t. Hypotheses that extend the same prefix have read the same tokens, so they
share that row: rows differ only where the hypotheses' pasts differ.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import torch

from app.charts.attention import map_height, single_map
from app.charts.beam_tree import children_of, tree_layout
from app.charts.labels import visible
from app.charts.style import VERMILLION, finish
from engine import Beam, Candidate

SHOWN_PREFIX = 5  # tokens of a prefix a row's label names; earlier ones are "…" (a date's ten cut the map at 1024 px)


def kept_at(beam: Beam, t: int) -> list[Candidate]:
    """The hypotheses the beam kept at step t, as its tree stacks them top to bottom."""
    ys = tree_layout(children_of(beam))
    return sorted(beam.steps[t], key=lambda c: -ys[c.tokens])


def row_label(candidate: Candidate, t: int, vocab: tuple[str, ...], on_best: bool) -> str:
    """"… 2 0 2 → 6": the last tokens read before step t, then the token written at t; in
    vermillion on the hypothesis the search returns."""
    before = [visible(vocab[w]) for w in candidate.tokens[:t]] or ["&lt;sos&gt;"]
    cut = ["…"] if len(before) > SHOWN_PREFIX else []
    label = " ".join([*cut, *before[-SHOWN_PREFIX:], "→", visible(vocab[candidate.tokens[t]])])
    return f"<span style='color:{VERMILLION}'><b>{label}</b></span>" if on_best else label


def row_weights(hypotheses: list[Candidate], t: int, head: int, keys: torch.Tensor | None) -> np.ndarray:
    """[K, S'] float32: each hypothesis's row at step t (one head), the keys `keys` selects."""
    z = torch.stack([c.attention[t, head] for c in hypotheses])  # [K, S_k]
    return (z if keys is None else z[:, keys]).float().numpy()  # [K, S']


def beam_rows(beam: Beam, t: int, source: list[str], vocab: tuple[str, ...], keys: torch.Tensor | None = None,
              head: int = 0) -> go.Figure:
    """The attention row alpha_t of every hypothesis the beam kept at step t; z is exactly their
    Candidate.attention[t, head], rows in the tree's order.

    source  the text of each key shown (after `keys` selects), as on the alignment maps
    vocab   the text of each target token (task.target_vocab)
    keys    [S_k] bool: the keys to show (decoding.looked_at: a padded source's padding, weight 0
            in every row, left out as on the maps); None: every key
    head    a transformer's head (its top layer's cross-attention), as on the maps
    """
    if not 0 <= t < len(beam.steps):
        raise ValueError(f"t must be 0..{len(beam.steps) - 1} (the beam ran {len(beam.steps)} steps), got {t}")
    if beam.best.attention is None:
        raise ValueError("this beam kept no attention rows: its decoder has no attention over the source")
    heads = beam.best.attention.shape[1]
    if not 0 <= head < heads:
        raise ValueError(f"head must be 0..{heads - 1} (this attention has {heads}), got {head}")
    hypotheses = kept_at(beam, t)
    z = row_weights(hypotheses, t, head, keys)  # [K, S']
    if len(source) != z.shape[1]:
        raise ValueError(f"source: one token per key shown, {z.shape[1]} of them; got {len(source)}")
    best = beam.best.tokens
    labels = [row_label(c, t, vocab, c.tokens == best[: t + 1]) for c in hypotheses]
    fig = single_map(z, np.zeros(z.shape, dtype=bool), labels, [visible(s) for s in source],
                     ("hypothesis", "source i", "α<sub>ti</sub>"),
                     ("read before t → token written at t", "source token i"))
    fig.update_yaxes(automargin=True)  # the labels are prefixes, wider than a token
    head_note = f", head {head}" if heads > 1 else ""
    fig = finish(fig, f"Beam at output step t = {t}: where each hypothesis looks{head_note}",
                 height=map_height(len(hypotheses)) + 25)
    kept = f"the {len(hypotheses)} hypotheses kept at step t, as the tree stacks them"
    return fig.update_layout(title_subtitle=dict(text=f"{kept}; vermillion: on the path of the one returned",
                                                 font=dict(size=12)), margin=dict(t=75))
