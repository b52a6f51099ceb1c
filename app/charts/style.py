"""The look every figure shares: the Okabe-Ito palette, heights, titles, and axis ranges.

Every figure has a title, axis titles with units, Okabe-Ito colours (distinguishable with every
common colour-vision deficiency), hover text with the exact values, a compact height and the
"plotly_white" template. No streamlit here.
"""
from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from app.charts.refill import copied

# Okabe & Ito (2008), "Color Universal Design"
ORANGE, SKY_BLUE, GREEN, BLUE, VERMILLION, PURPLE, BLACK = (
    "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000"
)
GREY = "#777777"
HEIGHT = 300  # px
# Under the plot, in px at the default 12 px type: the x axis's tick labels and title, then each row
# of a legend. The narrowest plot a legend must fit: half a page at 1024 px, less the margins.
# In chromium the axis title's text reaches 53 px under the plot and a legend row's text begins 4 px
# under the legend's top: at 50 the first row's names lay on the axis title (Gradients, Compare cells).
UNDER_AXIS, LEGEND_ROW, NARROWEST_PLOT = 60, 22, 230
# A page's width at 1024 px (the sidebar open): about 565 px, a plot of PAGE_PLOT px between the
# margins, and PAGE_CHARS characters of a 15 px title (twice a half column's 34).
PAGE_PLOT, PAGE_CHARS = 480, 68
# A trace whose line width encodes a value (the lines view of attention: width by weight) says so in
# its meta, {WIDTH_ENCODES: "what"}; for_projector leaves its width alone, where it thickens every
# other line to 3 px (which made every weight bin of the lines view one width).
WIDTH_ENCODES = "width encodes"
# Every figure is "plotly_white" from its construction: plotly installs the default template with
# validation off (1 ms), where `update_layout(template="plotly_white")` validates and deep-copies it
# (20 ms a figure, a fifth of a live page's tick with 2 figures; benchmarks/README, section 12).
pio.templates.default = "plotly_white"
TAG, ENTITY = re.compile(r"<[^>]*>"), re.compile(r"&#?\w+;")  # plotly's pseudo-HTML in a title


def finish(fig: go.Figure, title: str, height: int = HEIGHT) -> go.Figure:
    """The look every figure shares: title at the top left, plotly_white, `height` px, and
    automatic ticks as 3e-11 rather than SI prefixes (3p reads as picometres, not a gradient)."""
    title = dict(text=title, x=0.01, xanchor="left", font=dict(size=15))
    # Every axis the figure has, set directly: update_xaxes / update_yaxes find them by sorting and
    # matching their names, and a figure of five panels took 7 ms to finish that way, 4 ms this way.
    for name in {"xaxis", "yaxis", *(k for k in fig.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis")))}:
        fig.layout[name].exponentformat = "e"
    return fig.update_layout(title=title, height=height, margin=dict(l=65, r=20, t=50, b=45))


def axis(values) -> dict:
    """y axis settings for a loss-like series: log when every finite value is > 0, ranged over
    the finite values with 5% padding; on a log axis, ticks at 1-2-5 written out in full."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    log = len(v) > 0 and bool((v > 0).all())
    if log:
        v = np.log10(v)
    if not len(v):
        return dict(type="linear", range=[0.0, 1.0])
    pad = 0.05 * (v.max() - v.min()) or (0.1 if log else 0.1 * max(abs(v.max()), 1.0))
    low = v.min() - pad if log or v.min() < 0 else max(v.min() - pad, 0.0)
    settings = dict(type="log" if log else "linear", range=[low, v.max() + pad])
    if log:
        decades = range(int(np.floor(low)), int(np.ceil(v.max() + pad)) + 1)
        ticks = [m * 10.0**k for k in decades for m in (1, 2, 5) if low <= np.log10(m) + k <= v.max() + pad]
        if len(ticks) > 8:  # every decade, or every n-th one: at most 7 ticks
            ticks = [10.0**k for k in decades[:: -(-len(decades) // 7)]]
        if len(ticks) >= 3:
            settings.update(tickvals=ticks, ticktext=[f"{t:g}" for t in ticks])
    return settings


def top_of(settings: dict) -> float:
    """The data value at the top of an axis range (a log axis's range is in log10 units)."""
    return 10 ** settings["range"][1] if settings["type"] == "log" else settings["range"][1]


def legend_rows(fig: go.Figure, font_px: float = 12, width: float = NARROWEST_PLOT) -> int:
    """How many rows a horizontal legend of `fig`'s named traces takes in a plot `width` px wide:
    each entry is its symbol (40 px) and its name (about 0.55 of the type's size per character).
    When they do not fit in one row, plotly lines the entries up in columns as wide as the widest
    entry (four entries whose names fit two a row at 230 px took four rows, and the plot shrank
    under them: the legend then lay on the axis title once the page widened)."""
    entries = [40 + 0.55 * font_px * len(t.name) for t in fig.data if t.name and t.showlegend is not False]
    if sum(entries) <= width:
        return 1
    per_row = max(1, int(width // max(entries)))
    return -(-len(entries) // per_row)


def legend_below(fig: go.Figure, under_axis: float = UNDER_AXIS, row: float = LEGEND_ROW,
                 font_px: float = 12, width: float = NARROWEST_PLOT) -> go.Figure:
    """The legend in rows under the x axis's tick labels and title, where it covers no data: its
    top `under_axis` px below the plot, whatever the width. A fraction of the plot's height put it
    on the axis title of a short plot and far below a tall one; the plot's height in px is known
    (the figure's, less its margins), so the fraction is worked out from it. The figure grows by
    every row past the first, so a long legend does not squeeze the plot. `width`: the plot's px
    at its narrowest (less than half a page's where a wide left margin takes some)."""
    rows = legend_rows(fig, font_px, width)
    height = (fig.layout.height or HEIGHT) + int(row * (rows - 1))
    bottom = int(under_axis + row * rows + 5)
    plot = height - (fig.layout.margin.t or 50) - bottom
    # No gap between legend groups (one per line of lines_by): plotly's 10 px made each row 29 px, a
    # legend of six rows outgrew the margin, and plotly shrank the plot to fit it, which lifted the
    # legend (placed as a fraction of the plot's height) onto the axis title.
    return fig.update_layout(height=height, margin=dict(b=bottom), legend=dict(
        orientation="h", x=0, xanchor="left", y=-under_axis / plot, yanchor="top", font=dict(size=font_px),
        tracegroupgap=0))


def for_projector(fig: go.Figure, diagram: bool = False) -> go.Figure:
    """A copy of `fig` for a projector at the back of a room: larger type, thicker lines (except
    those whose width encodes a value: WIDTH_ENCODES) and markers, at most six ticks an axis, and
    the legend under the plot, where it covers no data.
    A diagram (boxes of text sized to their words) only grows taller, its title a little larger."""
    if diagram:
        return copied(fig).update_layout(title_font=dict(size=18), height=int((fig.layout.height or HEIGHT) * 1.2))
    big = copied(fig)
    # The top margin grows with the title's type (15 to 21 px), or a subtitle sat on the plot's top.
    top = round((fig.layout.margin.t or 50) * 1.4)
    big.update_layout(font=dict(size=16), title_font=dict(size=21), margin=dict(t=top))
    big.update_xaxes(title_font=dict(size=17), tickfont=dict(size=15), nticks=6)
    big.update_yaxes(title_font=dict(size=17), tickfont=dict(size=15), nticks=6)
    big.update_traces(line=dict(width=3), selector=lambda trace: trace.type == "scatter" and not width_is_data(trace))
    big.update_traces(marker=dict(size=9), selector=dict(mode="markers"))
    big.update_annotations(font=dict(size=15))
    if fig.layout.height:
        big.update_layout(height=int(fig.layout.height * 1.3))
    # 15 px ticks, a 17 px title per line: in chromium the title's text reaches 58 px under the plot and the
    # legend's 15 px rows begin higher than its top says (at 70, 'ReLU RNN' lay on 'time step t').
    under_axis = 85 + 20 * str(fig.layout.xaxis.title.text).count("<br>")
    # A page's width at 1024 px holds twice a column's 34 characters of a 15 px title (fewer at 21 px).
    return wrap_title(legend_below(big, under_axis=under_axis, row=27, font_px=15), chars=PAGE_CHARS)


def shown_length(text: str) -> int:
    """How many characters `text` shows: its tags (<sub>, <b>) take none, an entity (&lt;) one.
    "Free running: alignment α<sub>ti</sub>" shows 27 and fits half a page; counted as 38, its
    α<sub>ti</sub> went onto a line of its own."""
    return len(ENTITY.sub("&", TAG.sub("", text)))


def width_is_data(trace) -> bool:
    """The trace's line width encodes a value (its meta has WIDTH_ENCODES): keep it."""
    return isinstance(trace.meta, dict) and WIDTH_ENCODES in trace.meta


def export_config(fig: go.Figure) -> dict:
    """The camera button's picture: 1600 px wide at twice the pixels, the figure's own aspect, so
    a slide gets the whole legend (at the width on screen it was cut: 462 x 300)."""
    height = int((fig.layout.height or HEIGHT) * 1600 / 1000)
    return {"toImageButtonOptions": {"format": "png", "width": 1600, "height": height, "scale": 2}}


def wrap_title(fig: go.Figure, chars: int = 34) -> go.Figure:
    """A copy of `fig` whose title breaks into lines of at most about `chars` characters (that
    it shows: shown_length) of a 15 px title (fewer of a larger one: presentation mode's 21 px),
    at spaces, with room above the plot for them: half a page at 1024 px holds about 34
    characters of a 15 px title, and a longer one was cut at the plot's edge."""
    size = fig.layout.title.font.size or 15
    chars, line_px = int(chars * 15 / size), round(20 * size / 15)
    text = fig.layout.title.text or ""
    words = text.replace("<br>", " ").split(" ")  # wrapped before: wrap again
    lines = [""]
    for word in words:
        if lines[-1] and shown_length(lines[-1]) + 1 + shown_length(word) > chars:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    if len(lines) == 1:
        return fig
    wrapped = copied(fig).update_layout(title_text="<br>".join(lines))
    more = line_px * (len(lines) - 1 - text.count("<br>"))  # the lines it had have their room already
    height = (fig.layout.height or HEIGHT) + more
    if fig.layout.title.yanchor == "bottom":  # stood on what is under it: plotly lays the lines after the first
        wrapped.update_layout(title_pad_b=(fig.layout.title.pad.b or 0) + more)  # below it, so it rises by them
    return wrapped.update_layout(margin=dict(t=(fig.layout.margin.t or 50) + more), height=height)
