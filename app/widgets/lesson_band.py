"""The open lesson's ensemble drawn behind the student's run, on the lesson's page: the student sees
that their run is one of many and where it sits. Drawn only while the run on the page is one the
ensemble measured (the lesson's setup, or a variant its card asks for, any seed)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts.lesson_band import lesson_band, live_series
from app.charts.views import view
from app.session import ensembles
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.widgets import state
from app.widgets.figures import show


def open_ensemble() -> ensembles.Ensemble | None:
    lesson = BY_KEY.get(state.get(state.LESSON))
    return None if lesson is None else ensembles.shipped(lesson.key)


def caption(ensemble: ensembles.Ensemble) -> None:
    st.caption(f"Shaded: the range of the lesson's {ensemble.describe()}; the line: your run. The card quotes "
               "what held across all of them: a run outside the shade is a run the measurements did not see.")


def for_lab(lab: Lab) -> None:
    """On a page that trains the Lab: its held-out curve (or its gradient log) over the band of the
    ensemble's run with the Lab's setup."""
    ensemble = open_ensemble()
    run = None if ensemble is None else ensemble.run_of(lab.setup)
    if run is None:
        return
    series = ensemble.series(run)[0]
    source = lab.probes if series == "ratio" else lab.held_out  # a new model brings new ones
    log = source.log_frame() if series == "ratio" else source.frame()

    def build():
        return lesson_band({run: ensemble.band(run, series)}, {run: live_series(log, series)}, series,
                           len(ensemble.members), lab.task.metric_name)

    version = (state.get(state.LESSON), run, len(log), log["step"].iloc[-1] if len(log) else 0)  # every 25 steps
    show(view(source, "lesson_band", (), build, version), "lesson_band")
    caption(ensemble)


def for_runs(trainee: object, log: pd.DataFrame, metric_name: str, colours: dict[str, str] | None = None) -> None:
    """On a page that trains runs side by side (Compare cells, Why √d_k, Transfer learning) as the open
    lesson does: each run's log (run, step, and the series) over its band, each in its colour on the page's
    other figures (`colours`; else the palette's). `trainee`, the session's object that trains them, keeps the
    figure (the ensemble is every session's)."""
    ensemble = open_ensemble()
    if ensemble is None or not len(log):
        return
    runs = [run for run in ensemble.runs() if run in set(log["run"])]
    if not runs:
        return
    series = ensemble.series(runs[0])[0]
    live = {run: live_series(log[log["run"] == run], series) for run in runs}

    def build():
        bands = {run: ensemble.band(run, series) for run in runs}
        return lesson_band(bands, live, series, len(ensemble.members), metric_name, colours)

    measured = tuple((run, len(frame), frame["step"].iloc[-1] if len(frame) else 0) for run, frame in live.items())
    show(view(trainee, "lesson_band", (), build, version=(state.get(state.LESSON), measured)), "lesson_band")
    caption(ensemble)
