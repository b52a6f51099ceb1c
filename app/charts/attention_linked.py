"""The alignment as a Vega-Lite chart (altair) whose cells, pointed at, light up their source token
and output step: the Encoder-decoder page's linked view, and the frame its CSV download holds.
No Streamlit here."""
from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from app.charts.attention import checked_tokens, weights_of
from app.charts.labels import VISIBLE
from app.charts.style import VERMILLION
from engine import AttentionTrace

LINKED_BLUES = ["#FFFFFF", "#4292C6", "#08306B"]  # plotly's Blues at 0, 0.5, 1 (Vega's "blues" starts light blue)


def alignment_frame(trace: AttentionTrace, source: list[str], output: list[str], head: int) -> pd.DataFrame:
    """One row per cell: t, i, their tokens and alpha_ti."""
    z = weights_of(trace, head)  # [T_out, S]
    t, i = np.meshgrid(np.arange(z.shape[0]), np.arange(z.shape[1]), indexing="ij")  # each [T_out, S]
    return pd.DataFrame({"t": t.ravel(), "i": i.ravel(), "alpha": z.ravel().astype(float),
                         "output": np.array(output, dtype=object)[t.ravel()],
                         "source": np.array(source, dtype=object)[i.ravel()]})


def plain(token: str) -> str:
    """A token as Vega-Lite text: whitespace as a visible mark, as labels.visible does, but no
    HTML escapes (Vega draws text as it is, so &lt; would show as such)."""
    return "".join(VISIBLE.get(ch, ch) if ch.isspace() else ch for ch in str(token))


def token_labels(tokens: list[str]) -> str:
    """A Vega expression naming each position's token on an axis (tokens repeat, so the axis is
    by position, labelled by token)."""
    return f"{json.dumps(tokens)}[datum.value]"


def alignment_linked(trace: AttentionTrace, source_tokens: list[str], output_tokens: list[str],
                     head: int = 0) -> alt.VConcatChart:
    """The alignment as a Vega-Lite chart whose cells, pointed at (hover, or a tap on a touch
    screen), light up their source token (the strip above) and output step (the strip at the
    right) and say alpha_ti. Same inputs as alignment(); the data are the trace's weights."""
    T_out, S = trace.weights.shape[1:]
    checked_tokens(source_tokens, S, "source_tokens"), checked_tokens(output_tokens, T_out, "output_tokens")
    source, output = [plain(tok) for tok in source_tokens], [plain(tok) for tok in output_tokens]
    frame = alignment_frame(trace, source, output, head)
    at_i = alt.selection_point(name="source_i", fields=["i"], on="pointerover", clear="pointerout", empty=False)
    at_t = alt.selection_point(name="output_t", fields=["t"], on="pointerover", clear="pointerout", empty=False)
    cell = min(28, max(10, 440 // max(S, T_out)))
    x = alt.X("i:O", title="source token i", axis=alt.Axis(labelExpr=token_labels(source), labelAngle=0))
    y = alt.Y("t:O", title="output token (step t)", axis=alt.Axis(labelExpr=token_labels(output)))
    cells = alt.Chart(frame).mark_rect(strokeWidth=2).encode(
        x=x, y=y,
        color=alt.Color("alpha:Q", title="α_ti",
                        scale=alt.Scale(domain=[0, 0.5, 1], range=LINKED_BLUES, interpolate="rgb")),
        stroke=alt.condition(at_i & at_t, alt.value(VERMILLION), alt.value(None)),
        tooltip=[alt.Tooltip("t:O", title="output step t"), alt.Tooltip("output:N", title="writes"),
                 alt.Tooltip("i:O", title="source i"), alt.Tooltip("source:N", title="reads"),
                 alt.Tooltip("alpha:Q", title="α_ti", format=".6g")],
    ).add_params(at_i, at_t).properties(width=cell * S, height=cell * T_out)
    source_strip = strip(pd.DataFrame({"i": range(S), "token": source}), "i", at_i, cell * S, cell)
    output_strip = strip(pd.DataFrame({"t": range(T_out), "token": output}), "t", at_t, cell, cell * T_out)
    readout = alt.Chart(frame).mark_text(align="left", fontSize=14, color=VERMILLION).encode(
        x=alt.value(0), text=alt.Text("label:N")).transform_filter(at_i).transform_filter(at_t).transform_calculate(
        label="'α(' + datum.t + ',' + datum.i + ') = ' + format(datum.alpha, '.4f') + ': step ' + datum.t + "
              "' writes ' + datum.output + ', reads ' + datum.source").properties(
        width=max(cell * S, 320), height=20, view=alt.ViewBackground(stroke=None))
    top = alt.hconcat(source_strip, alt.Chart().mark_text().properties(width=cell, height=cell))
    body = alt.hconcat(cells, output_strip).resolve_scale(y="shared")
    chart = alt.vconcat(top, body, readout).resolve_scale(x="shared")
    return chart.properties(title=alt.Title("Alignment α_ti: point at a cell to see what it links",
                                            anchor="start", fontSize=15))


def strip(frame: pd.DataFrame, field: str, picked, width: int, height: int) -> alt.LayerChart:
    """A row (field "i") or column (field "t") of tokens, the picked one lit in vermillion."""
    place = alt.X(f"{field}:O", axis=None) if field == "i" else alt.Y(f"{field}:O", axis=None)
    lit = alt.condition(picked, alt.value(VERMILLION), alt.value("#F2F2F2"))
    boxes = alt.Chart(frame).mark_rect().encode(place, color=lit)
    words = alt.Chart(frame).mark_text(fontSize=13).encode(
        place, text="token:N", color=alt.condition(picked, alt.value("white"), alt.value("black")))
    return alt.layer(boxes, words).properties(width=width, height=height)
