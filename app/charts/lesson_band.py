"""A lesson's ensemble as a band, the student's live run drawn over it: where one run sits among the
runs measured over seeds and kernel paths. No Streamlit here."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from app.charts.labels import STEP_AXIS
from app.charts.log_lines import PALETTE
from app.charts.style import axis, finish, legend_below

SERIES = {  # a series' axis title
    "loss": "held-out loss",
    "metric": "held-out score",
    "ratio": "‖∂L/∂h_1‖ / ‖∂L/∂h_T‖",
    "entropy": "attention entropy (nats)",
}
HEIGHT = 320  # px: it stands above the page's own figures; the legend below takes a row per two runs
LOG_SERIES = ("loss", "ratio")  # spanning orders of magnitude: a log axis


def translucent(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def lesson_band(bands: dict[str, pd.DataFrame], live: dict[str, pd.DataFrame], series: str, members: int,
                metric_name: str = "score", colours: dict[str, str] | None = None) -> go.Figure:
    """One panel: for each run, the band (step, low, high) of `members` measured runs, filled, and
    the student's live curve (step, value) over it in the same colour.

    bands   run name -> step, low, high
    live    run name -> step, value (a run the student has not trained yet may be missing)
    colours run name -> its colour on the page's other figures (a run not named: the palette's, in turn)
    """
    fig = go.Figure()
    log = series in LOG_SERIES
    values = [v for band in bands.values() for v in (*band["low"], *band["high"])]
    values += [v for mine in live.values() for v in mine["value"]]
    floor = min([v for v in values if v > 0], default=1e-12) / 10  # a log axis has no 0: a run's 0 sits here
    for (run, band), palette in zip(bands.items(), PALETTE):
        colour = (colours or {}).get(run, palette)
        low = band["low"].clip(lower=floor) if log else band["low"]
        fig.add_trace(go.Scatter(x=band["step"], y=band["high"], mode="lines", line=dict(width=0), showlegend=False,
                                 hoverinfo="skip", legendgroup=run))
        fig.add_trace(go.Scatter(
            x=band["step"], y=low, mode="lines", line=dict(width=0), fill="tonexty",
            fillcolor=translucent(colour, 0.22), name=f"{run}: {members} measured runs", legendgroup=run,
            customdata=band["high"], hovertemplate=f"{run}, step %{{x:,}}: measured %{{y:.3g}} to "
                                                   "%{customdata:.3g}<extra></extra>"))
        mine = live.get(run)
        if mine is not None and len(mine):
            fig.add_trace(go.Scatter(x=mine["step"], y=mine["value"].clip(lower=floor) if log else mine["value"],
                                     mode="lines+markers", name=f"{run}: yours",
                                     line=dict(color=colour, width=2.4), marker=dict(size=4), legendgroup=run,
                                     hovertemplate=f"{run}, step %{{x:,}}: yours %{{y:.4g}}<extra></extra>"))
    title = {"metric": f"held-out {metric_name}"}.get(series, SERIES[series])
    settings = axis([max(v, floor) for v in values]) if log else {"type": "linear"}
    if series == "metric" and metric_name == "accuracy":
        settings = {"type": "linear", "range": [0, 1.02]}
    fig.update_yaxes(title_text=title, **settings)
    fig.update_xaxes(title_text=STEP_AXIS, range=[0, max([1, *(b["step"].max() for b in bands.values())])])
    finish(fig, "Your run among the measured runs", height=HEIGHT)
    return legend_below(fig)


def live_series(log: pd.DataFrame, series: str) -> pd.DataFrame:
    """step, value of one column of a page's log (its held-out or gradient log), the finite ones."""
    if series not in log or not len(log):
        return pd.DataFrame({"step": [], "value": []})
    frame = pd.DataFrame({"step": log["step"].to_numpy(), "value": log[series].to_numpy(dtype=float)})
    return frame[np.isfinite(frame["value"])]
