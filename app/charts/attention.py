"""Figures of attention: an AttentionTrace (engine/sites.py) in, a plotly Figure out (the linked
altair view is attention_linked.py's). No streamlit here.

In Bahdanau et al.'s notation (the GWU lecture's) a recurrent decoder's alignment is alpha_ti, how much output step t
looks at source token h_i, with the context c_t = sum_i alpha_ti h_i; a transformer's head is
softmax(Q K^T / sqrt(d_k)). Every map is queries down (output step t, or the token that asks)
and keys across (the source token i, or the token looked at), t = 0 at the top as in a matrix.

Weights live in 0..1 and are drawn on one sequential scale from white (0: nothing taken from
there) to dark blue (1); a cell the query may not look at (a causal mask's future, padding:
logit -inf, weight exactly 0) is greyed over, so "masked" and "chose not to look" differ on
screen. The heatmaps' z are float32 numpy arrays (the mask uint8), which plotly sends as base64
typed arrays rather than lists of numbers, and a map over 60 tokens carries no per-cell hover
text: a causal 512 x 512 map is about 1.8 MB of JSON.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from torch import Tensor

from app.charts.labels import visible
from app.charts.style import BLUE, GREEN, GREY, HEIGHT, SKY_BLUE, VERMILLION, finish, shown_length
from engine import AttentionTrace, Recording, Site

WEIGHT_SCALE = "Blues"  # sequential, colour-blind safe: 0 white, 1 dark blue
MASK_GREY = "#C8C8C8"
MAX_TICKS = 60  # a token per tick on a full-size map up to this many; positions beyond
GRID_TICKS = 16  # the same on a small map of the grid
HOVER_TOKENS = 60  # per-cell hover names its tokens up to this many rows and columns (beyond: positions)
MASKED_NOTE = "grey: masked (the query may not look there; weight exactly 0)"
# The decoding step's panels (alpha_t, c_t, p) as fractions of the plot's width, and the gap
# between two of them, which holds the right one's y tick labels and axis title (15 and 17 px in
# presentation mode) at the narrowest: about 480 px of plot, a page at 1024 px (at 0.08 they ran
# into the panel on the left).
STEP_WIDTHS, STEP_SPACING = [0.36, 0.28, 0.36], 0.15


# ------------------------------------------------------------------ shared pieces

def shown(tokens: list[str]) -> list[str]:
    return [visible(tok) for tok in tokens]


def checked_tokens(tokens: list[str], count: int, what: str) -> list[str]:
    if len(tokens) != count:
        raise ValueError(f"{what}: one token per position, {count} of them; got {len(tokens)}")
    return shown(tokens)


def checked_head(trace: AttentionTrace, head: int | None) -> None:
    heads = trace.weights.shape[0]
    if head is not None and not 0 <= head < heads:
        raise ValueError(f"head must be 0..{heads - 1} (this attention has {heads}), got {head}")


def weights_of(trace: AttentionTrace, head: int | None) -> np.ndarray:
    """[T_q, T_k] float32: one head's weights, or (head None) their mean over heads."""
    checked_head(trace, head)
    weights = trace.weights if head is None else trace.weights[head : head + 1]  # [h, T_q, T_k]
    return weights.float().mean(dim=0).numpy().astype(np.float32)


def masked_of(trace: AttentionTrace) -> np.ndarray:
    """[T_q, T_k] bool: where the query may not look (logit -inf). Every head shares the mask."""
    return torch.isneginf(trace.logits).all(dim=0).numpy()


def pair_names(query: list[str], key: list[str]) -> np.ndarray | None:
    """[T_q, T_k, 2] object: each cell's query and key token, for the hover; None on a map too
    large to carry them (the hover then gives positions only, and the page stays light)."""
    if len(query) > HOVER_TOKENS or len(key) > HOVER_TOKENS:
        return None
    names = np.empty((len(query), len(key), 2), dtype=object)
    names[:, :, 0] = np.array(query, dtype=object)[:, None]
    names[:, :, 1] = np.array(key, dtype=object)[None, :]
    return names


def weights_heatmap(z: np.ndarray, query: list[str], key: list[str], names: tuple[str, str, str],
                    coloraxis: str = "coloraxis") -> go.Heatmap:
    """z [T_q, T_k] as a heatmap on the shared colour axis. names: how the hover calls a query
    row, a key column and a value ("output step t", "source i", "alpha_ti")."""
    q_name, k_name, v_name = names
    pairs = pair_names(query, key)
    q_text = f"{q_name} %{{y}}" + (" (%{customdata[0]})" if pairs is not None else "")
    k_text = f"{k_name} %{{x}}" + (" (%{customdata[1]})" if pairs is not None else "")
    return go.Heatmap(
        z=z, x=np.arange(z.shape[1]), y=np.arange(z.shape[0]), coloraxis=coloraxis, customdata=pairs,
        hovertemplate=f"{q_text}<br>{k_text}<br>{v_name} = %{{z:.6g}}<extra></extra>",
    )


def mask_overlay(masked: np.ndarray) -> go.Heatmap | None:
    """The masked cells greyed over: z 1 there, 0 (transparent) elsewhere, as uint8 (a quarter of
    the weights' bytes); None when nothing is masked. It takes no hover, so the weights' hover
    (0 there) shows through."""
    if not masked.any():
        return None
    return go.Heatmap(z=masked.astype(np.uint8), x=np.arange(masked.shape[1]), y=np.arange(masked.shape[0]),
                      showscale=False, colorscale=[[0, "rgba(0,0,0,0)"], [1, MASK_GREY]], zmin=0, zmax=1,
                      name="masked", hoverinfo="skip")


def weight_axis(title: str) -> dict:
    """The shared colour axis of weights: 0..1, its bar titled with Bahdanau et al.'s symbol."""
    return dict(colorscale=WEIGHT_SCALE, cmin=0.0, cmax=1.0,
                colorbar=dict(title=dict(text=title, side="right"), thickness=12, tickvals=[0, 0.25, 0.5, 0.75, 1]))


def token_ticks(fig: go.Figure, axis: str, tokens: list[str], limit: int, **where) -> None:
    """Tokens as the ticks of an axis ("x" or "y") when there are at most `limit`; positions else."""
    if len(tokens) > limit:
        return
    # Words side by side (<sos> <eos>, a sentence) stand upright: slanted at -45, "beach" and "yesterday" lay over each
    # other in a 340 px map at 1024 px (a typed sentence's free run, issue 46)
    upright = axis == "x" and max(len(tok) for tok in tokens) > 2 and len(tokens) > 4
    ticks = dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=tokens, tickangle=-90 if upright else 0,
                 tickfont=dict(size=12 if len(tokens) <= 30 else 9))
    (fig.update_xaxes if axis == "x" else fig.update_yaxes)(**ticks, **where)


def map_height(rows: int) -> int:
    return int(min(720, max(HEIGHT, 110 + 22 * rows)))


def single_map(z: np.ndarray, masked: np.ndarray, query: list[str], key: list[str], names: tuple[str, str, str],
               axis_titles: tuple[str, str]) -> go.Figure:
    """One full-size map: weights, the mask over them, tokens as ticks, t = 0 at the top."""
    fig = go.Figure(weights_heatmap(z, query, key, names))
    overlay = mask_overlay(masked)
    if overlay is not None:
        fig.add_trace(overlay)
    fig.update_layout(coloraxis=weight_axis(names[2]))
    token_ticks(fig, "x", key, MAX_TICKS)
    token_ticks(fig, "y", query, MAX_TICKS)
    fig.update_xaxes(title_text=axis_titles[1], side="bottom", showline=True, mirror=True, linecolor=GREY)
    fig.update_yaxes(title_text=axis_titles[0], autorange="reversed", showline=True, mirror=True, linecolor=GREY)
    return fig


def with_note(fig: go.Figure, masked: bool, room: int = 75) -> go.Figure:
    """Says what the grey is, under the title, when something is masked; `room`: the top margin
    that holds both (a grid's panel titles need more)."""
    if not masked:
        return fig
    return fig.update_layout(title_subtitle=dict(text=MASKED_NOTE, font=dict(size=12)), margin=dict(t=room))


# ------------------------------------------------------------------ a recurrent decoder's alignment

def alignment(trace: AttentionTrace, source_tokens: list[str], output_tokens: list[str], head: int = 0) -> go.Figure:
    """The alignment matrix alpha_ti: output steps t down, source tokens i across; z is exactly
    the trace's weights[head] ([T_out, S]).

    trace          rec.attention_traces[engine.sites.ALIGNMENT] of an AttentionEncoderDecoder, or a
                   transformer's cross-attention (then `head` picks the head)
    source_tokens  the source as text, S of them (task.symbols_of(rec.x))
    output_tokens  the token each output step writes, T_out of them (the target, teacher-forced:
                   task.target_vocab[y] for y in rec.y)
    """
    checked_head(trace, head)
    T_out, S = trace.weights.shape[1:]
    source = checked_tokens(source_tokens, S, "source_tokens")
    output = checked_tokens(output_tokens, T_out, "output_tokens")
    fig = single_map(weights_of(trace, head), masked_of(trace), output, source,
                     ("output step t", "source i", "α<sub>ti</sub>"), ("output token (step t)", "source token i"))
    heads = f", head {head}" if trace.weights.shape[0] > 1 else ""
    fig = finish(fig, f"Alignment α<sub>ti</sub>{heads}: where each output step looks",
                 height=map_height(T_out))
    return with_note(fig, bool(masked_of(trace).any()))


def softmax_row(logits: Tensor) -> np.ndarray:
    return torch.softmax(logits.double(), dim=-1).numpy()


LIKELIEST = 20  # bars of p a decoding step shows at most: the likeliest tokens of a larger vocabulary


def decoding_step(trace: AttentionTrace, logits: Tensor, t: int, source_tokens: list[str],
                  target_vocab: tuple[str, ...], head: int = 0, chosen: int | None = None) -> go.Figure:
    """Output step t of a decoder, left to right: the attention row alpha_t over the source, the
    context vector c_t = sum_i alpha_ti h_i it reads, and p(next token) = softmax(logits_t) with
    the chosen token in vermillion.

    trace         the alignment (or a transformer's cross-attention: `head` picks the head)
    logits        the model's output logits [T_out, V] (rec.y_hat)
    target_vocab  the text of each of the V output tokens (task.target_vocab)
    chosen        the token written at t; None: the most likely one (greedy)
    """
    checked_head(trace, head)
    T_out, S = trace.weights.shape[1:]
    if not 0 <= t < T_out:
        raise ValueError(f"t must be 0..{T_out - 1} (the decoder wrote {T_out} steps), got {t}")
    if logits.shape != (T_out, len(target_vocab)):
        raise ValueError(f"logits must be [T_out, V] = [{T_out}, {len(target_vocab)}]; got {list(logits.shape)}")
    source = checked_tokens(source_tokens, S, "source_tokens")
    alpha = trace.weights[head, t].numpy().astype(np.float32)  # [S]
    context = trace.context[head, t].numpy().astype(np.float32)  # [d_v]
    p = softmax_row(logits[t]).astype(np.float32)  # [V]
    chosen = int(p.argmax()) if chosen is None else chosen
    if not 0 <= chosen < len(target_vocab):
        raise ValueError(f"chosen must be a token id 0..{len(target_vocab) - 1}, got {chosen}")
    # A vocabulary of hundreds of words drew a sub-pixel bar each: none could be seen (issue 44, finding 4). Past
    # LIKELIEST tokens, the likeliest, most likely first, and the one written among them.
    if len(target_vocab) <= LIKELIEST:
        ids = np.arange(len(target_vocab))
        which = f"p(token at step {t})"
    else:
        ids = np.argsort(-p, kind="stable")[:LIKELIEST]
        if chosen not in ids:
            ids = np.append(ids[:-1], chosen)
        which = f"p (top {LIKELIEST} of {len(target_vocab):,})"  # a longer title ran past the panel at 1024 px
    titles = [f"α<sub>{t},i</sub> over the source", f"c<sub>{t}</sub> = Σ<sub>i</sub> α<sub>{t},i</sub> h<sub>i</sub>",
              which]
    fig = make_subplots(rows=1, cols=3, column_widths=STEP_WIDTHS, horizontal_spacing=STEP_SPACING,
                        subplot_titles=titles)
    fig.add_trace(go.Bar(x=positions(S), y=alpha, marker_color=BLUE, name="α",
                         customdata=np.array(list(enumerate(source)), dtype=object),
                         hovertemplate="source i = %{customdata[0]} (%{customdata[1]})<br>α = %{y:.6g}<extra></extra>"),
                  row=1, col=1)
    fig.add_trace(go.Bar(x=np.arange(len(context)), y=context, marker_color=GREEN, name="c_t",
                         hovertemplate="unit %{x}<br>c = %{y:.6g}<extra></extra>"), row=1, col=2)
    words = shown([target_vocab[i] for i in ids])
    at = int(np.flatnonzero(ids == chosen)[0])  # where the written token stands among the bars
    colours = [VERMILLION if i == chosen else SKY_BLUE for i in ids]
    fig.add_trace(go.Bar(x=positions(len(words)), y=p[ids], marker_color=colours, name="p", customdata=np.array(
        words, dtype=object), hovertemplate="%{customdata}<br>p = %{y:.6g}<extra></extra>"), row=1, col=3)
    # Its text leans away from the panel's edge it is near (centred on the last token, "chosen: <eos>" ran
    # past the figure's right edge).
    side = "left" if at < len(words) / 3 else "right" if at > 2 * len(words) / 3 else "center"
    fig.add_annotation(x=at, y=float(p[chosen]), text=f"chosen: {words[at]}", showarrow=True, arrowhead=2,
                       ax=0, ay=-22, xanchor=side, font=dict(color=VERMILLION, size=12), row=1, col=3)
    fig.update_xaxes(**token_axis(source), title_text="source token i", row=1, col=1)
    fig.update_xaxes(title_text="unit of c<sub>t</sub>", automargin=True, row=1, col=2)
    fig.update_xaxes(**token_axis(words), title_text="output token", row=1, col=3)
    fig.update_yaxes(title_text="weight α", range=[0, 1.05], row=1, col=1)
    reach = 1.15 * float(np.abs(context).max() or 1.0)  # 0 in the middle; no tick label on the panel's corner
    fig.update_yaxes(title_text=f"c<sub>{t}</sub>", range=[-reach, reach], nticks=5, row=1, col=2)
    fig.update_yaxes(title_text="p", range=[0, 1.3], tickvals=[0, 0.5, 1], row=1, col=3)
    fig.update_annotations(font=dict(size=12), selector=dict(showarrow=False))
    fig = finish(fig, f"Decoding step t = {t}: attend, read c<sub>{t}</sub>, write '{words[at]}'")
    # The title stands on the panels' titles and grows upwards, into the top margin that wrap_title
    # grows, when it breaks: centred in the margin, its second line fell on them (presentation mode).
    return fig.update_layout(showlegend=False, title=dict(yref="paper", y=1, yanchor="bottom", pad=dict(b=30)),
                             margin=dict(t=62))


def positions(n: int) -> list[str]:
    """Positions 0..n-1 as the category names of a token_axis."""
    return [str(i) for i in range(n)]


def token_axis(tokens: list[str]) -> dict:
    """An x axis of positions labelled by their tokens that fits a narrow panel at any width: a
    category axis (its categories the positions, "0", "1", ...: tokens repeat, categories may not),
    each shown as its token (labelalias). Plotly labels every k-th category so that labels stand
    1.2 type sizes apart (fewer in presentation mode: its nticks); under the α panel at 1024 px, a
    typed date's 17 tokens, each labelled, ran into one another. Tokens longer than two characters
    stand upright: left to plotly, "<sos>" sat flush against "0" in presentation mode."""
    names = positions(len(tokens))
    upright = {"tickangle": -90} if max(shown_length(tok) for tok in tokens) > 2 else {}  # else plotly's "auto"
    return dict(type="category", categoryorder="array", categoryarray=names, labelalias=dict(zip(names, tokens)),
                automargin=True, **upright)


# ------------------------------------------------------------------ a transformer's heads

Tokens = list[str] | dict[str, list[str]]


def tokens_for(site: Site, tokens: Tokens) -> tuple[list[str], list[str]]:
    """(query tokens, key tokens) of a site. `tokens` is a list for a model of one stack, or per
    stack ({"encoder": source, "decoder": the decoder's inputs}): a cross-attention's queries are
    the decoder's, its keys the encoder's."""
    if isinstance(tokens, list):
        return tokens, tokens
    keys_stack = "encoder" if site.kind == "cross" else site.stack
    missing = [s for s in (site.stack, keys_stack) if s not in tokens]
    if missing:
        raise ValueError(f"{site.label} needs the tokens of the {missing[0]}; give tokens[{missing[0]!r}]")
    return tokens[site.stack], tokens[keys_stack]


def sites_of(rec: Recording, stack: str | None, kind: str) -> list[Site]:
    """The sites of one kind in one stack, by layer. `stack` may be None when one stack has them."""
    sites = [s for s in rec.attention_traces if s.kind == kind and (stack is None or s.stack == stack)]
    if not sites:
        known = ", ".join(s.label for s in rec.attention_traces) or "none"
        raise ValueError(f"no {kind} attention{f' in the {stack}' if stack else ''}; this recording has: {known}")
    stacks = sorted({s.stack for s in sites})
    if len(stacks) > 1:
        raise ValueError(f"both the {' and the '.join(stacks)} have {kind} attention; pick one with stack=")
    return sorted(sites, key=lambda s: s.layer or 0)


def head_grid(rec: Recording, tokens: Tokens, stack: str | None = None, kind: str = "self",
              average: bool = False) -> go.Figure:
    """Every layer (rows) x head (columns) of a transformer's attention of one kind (`rec`: a
    Recording, or anything with its attention_traces, e.g. engine.contextual.attention_of's), as small maps
    on one colour scale 0..1; each map's z is exactly that head's weights [T_q, T_k]. A decoder's
    causal mask shows as the grey triangle above the diagonal (weights exactly 0).

    tokens   a list (a model of one stack: task.symbols_of(rec.x)) or per stack, see tokens_for
    stack    "encoder" or "decoder"; None when only one stack has attention of this kind
    kind     "self" or "cross"
    average  one map per layer, the mean over its heads, instead of every head
    """
    sites = sites_of(rec, stack, kind)
    heads = rec.attention_traces[sites[0]].weights.shape[0]
    columns = [None] if average else list(range(heads))
    titles = [f"layer {site.layer} · " + ("mean of heads" if head is None else f"head {head}")
              for site in sites for head in columns]
    fig = make_subplots(rows=len(sites), cols=len(columns), shared_xaxes=True, shared_yaxes=True,
                        horizontal_spacing=0.02, vertical_spacing=0.1 / len(sites) + 0.03, subplot_titles=titles)
    any_masked = False
    for row, site in enumerate(sites, start=1):
        trace = rec.attention_traces[site]
        query, key = tokens_for(site, tokens)
        T_q, T_k = trace.weights.shape[1:]
        query, key = checked_tokens(query, T_q, f"{site.label} queries"), checked_tokens(key, T_k, f"{site.label} keys")
        masked = masked_of(trace)
        any_masked |= bool(masked.any())
        for col, head in enumerate(columns, start=1):
            fig.add_trace(weights_heatmap(weights_of(trace, head), query, key, ("query", "key", "weight")),
                          row=row, col=col)
            overlay = mask_overlay(masked)
            if overlay is not None:
                fig.add_trace(overlay, row=row, col=col)
        token_ticks(fig, "y", query, GRID_TICKS, row=row, col=1)
        if row == len(sites):
            for col in range(1, len(columns) + 1):
                token_ticks(fig, "x", key, GRID_TICKS, row=row, col=col)
    fig.update_yaxes(autorange="reversed", showline=True, mirror=True, linecolor=GREY)
    fig.update_xaxes(showline=True, mirror=True, linecolor=GREY)
    fig.update_xaxes(title_text="key (looked at)", row=len(sites))
    fig.update_yaxes(title_text="query (asks)", col=1)
    fig.update_layout(coloraxis=weight_axis("weight"))
    fig.update_annotations(font=dict(size=12), yshift=4)  # clear of the map's top border, which struck them through
    what = "mean over heads" if average else f"{heads} heads"
    place = f"{sites[0].stack} " if not sites[0].alone else ""
    fig = finish(fig, f"{kind.capitalize()}-attention of every {place}layer, {what}",
                 height=max(HEIGHT, 70 + 190 * len(sites)))
    return with_note(fig, any_masked, room=95)


def focused_head(trace: AttentionTrace, head: int | None, query_tokens: list[str],
                 key_tokens: list[str] | None = None) -> go.Figure:
    """One head of one attention at full size (head None: the mean of its heads); z is exactly
    that head's weights [T_q, T_k]. key_tokens default to query_tokens (self-attention); a
    cross-attention's keys are the source."""
    T_q, T_k = trace.weights.shape[1:]
    query = checked_tokens(query_tokens, T_q, "query_tokens")
    key = checked_tokens(query_tokens if key_tokens is None else key_tokens, T_k, "key_tokens")
    z = weights_of(trace, head)
    fig = single_map(z, masked_of(trace), query, key, ("query", "key", "weight"),
                     ("query: the token that asks", "key: the token looked at"))
    which = f"mean of {trace.weights.shape[0]} heads" if head is None else f"head {head}"
    fig = finish(fig, f"{trace.site.label.capitalize()}, {which}: softmax(QK<sup>T</sup>/√d<sub>k</sub>)",
                 height=map_height(T_q))
    return with_note(fig, bool(masked_of(trace).any()))
