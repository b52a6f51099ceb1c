"""Figures whose shape does not move with a control, built once and refilled.

Building a plotly figure checks every property it is given (make_subplots, update_yaxes, ...):
22-37 ms for the Unroll page's bars at one step, most of what moving its slider cost. Those
figures keep their panels, axes and ranges as t moves; only the bars' heights, a frame's position
and the title change. So the figure is built once per recording (its frame, kept with the
recording: Recording.derived), and each step copies it and puts the step's values in, unchecked
(about 2 ms): what goes in has the type and place the checked frame gave it.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go

from engine import Recording


def frame_of(rec: Recording, key: tuple, build: Callable[[], go.Figure]) -> dict:
    """The figure build() makes, as a dict, built once for this recording and key."""
    return rec.derived(("figure", *key), lambda: build().to_dict())


def unchecked(spec: dict) -> go.Figure:
    """A figure from a dict that a checked figure produced, without checking it again."""
    return go.Figure(spec, _validate=False)


def copied(fig: go.Figure) -> go.Figure:
    """A copy of a figure to change (go.Figure(fig) checks it all again: 9-11 ms for a bar chart)."""
    return unchecked(fig.to_dict())


def refilled(frame: dict, title: str, ys: Sequence[np.ndarray] = (), shapes: dict[int, dict] | None = None
             ) -> go.Figure:
    """A copy of `frame` with its title text, trace k's y replaced by ys[k] (every trace, in order,
    when ys is given) and shape k's fields updated by shapes[k]."""
    spec = copy.deepcopy(frame)
    spec["layout"]["title"]["text"] = title
    if ys:
        if len(ys) != len(spec["data"]):
            raise ValueError(f"{len(ys)} series for a figure of {len(spec['data'])} traces")
        for trace, y in zip(spec["data"], ys):
            trace["y"] = y
    for k, fields in (shapes or {}).items():
        spec["layout"]["shapes"][k].update(fields)
    return unchecked(spec)
