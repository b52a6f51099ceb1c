"""Figures whose shape does not move with a control, built once and refilled.

Building a plotly figure checks every property it is given (make_subplots, update_yaxes, ...):
22-37 ms for the Unroll page's bars at one step, most of what moving its slider cost. Those
figures keep their panels, axes and ranges as t moves; only the bars' heights, a frame's position
and the title change. So the figure is built once per recording (its frame, kept in the cache
of views: app/charts/views.py), and each step copies it and puts the step's values in, unchecked
(about 2 ms): what goes in has the type and place the checked frame gave it. Figures whose shape
does not change from one recording to the next (the Gates page's heatmaps, redrawn on every tick
of a playing page) keep their frame with the model instead (`frame_of`'s source).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go

from app.charts.views import view


def frame_of(source: object, key: tuple, build: Callable[[], go.Figure]) -> dict:
    """The figure build() makes, as a dict, built once for this source and key: a recording, or
    for a figure whose shape depends on the model and the choices, not on the values, the model."""
    return view(source, "frame", key, lambda: as_dict(build()))


def as_dict(fig: go.Figure) -> dict:
    """The figure's data and layout as plain dicts, its arrays kept as numpy arrays (to_dict
    would encode them for plotly.js, and a figure refilled from that would hand them to Python
    readers encoded)."""
    return {"data": [trace.to_plotly_json() for trace in fig.data], "layout": fig.layout.to_plotly_json()}


def structure(value):
    """A copy of a frame's dicts and lists, sharing its arrays and strings: a refill replaces the
    arrays it changes and changes none in place, and deep-copying a heatmap's tokens (an H x T
    array of strings) took 9 ms where its floats take 0.15."""
    if isinstance(value, dict):
        return {k: structure(v) for k, v in value.items()}
    if isinstance(value, list):
        return [structure(v) for v in value]
    return value


def unchecked(spec: dict) -> go.Figure:
    """A figure from a dict that a checked figure produced, without checking it again."""
    return go.Figure(spec, _validate=False)


def copied(fig: go.Figure) -> go.Figure:
    """A copy of a figure to change (go.Figure(fig) checks it all again: 9-11 ms for a bar chart)."""
    return unchecked(as_dict(fig))


def refilled(frame: dict, title: str | None = None, ys: Sequence[np.ndarray] = (),
             shapes: dict[int, dict] | None = None, traces: dict[int, dict] | None = None,
             axes: dict[str, dict] | None = None) -> go.Figure:
    """A copy of `frame` with its title text (None: as it was), trace k's y replaced by ys[k]
    (every trace, in order, when ys is given), shape k's fields updated by shapes[k], trace k's
    by traces[k] (a dict field such as a colourbar updated, not replaced) and each named axis's
    (axes["yaxis2"]) by its dict."""
    spec = structure(frame)
    if title is not None:
        spec["layout"]["title"]["text"] = title
    if ys:
        if len(ys) != len(spec["data"]):
            raise ValueError(f"{len(ys)} series for a figure of {len(spec['data'])} traces")
        for trace, y in zip(spec["data"], ys):
            trace["y"] = y
    for k, fields in (shapes or {}).items():
        spec["layout"]["shapes"][k].update(fields)
    for name, fields in (axes or {}).items():
        spec["layout"][name].update(fields)
    for k, fields in (traces or {}).items():
        trace = spec["data"][k]
        for name, value in fields.items():
            trace[name] = {**trace[name], **value} if isinstance(value, dict) and name in trace else value
    return unchecked(spec)  # its arrays become typed arrays as it is sent (to_dict), as a checked figure's do
