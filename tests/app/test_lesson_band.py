"""A lesson's page draws its ensemble as a band behind the student's run: the band is the shipped
runs' range, the line the run on the page, and neither is drawn once the run is not one measured."""
import dataclasses

import pytest
from streamlit.testing.v1 import AppTest

from app.session import ensembles
from app.session.lessons import BY_KEY

from .conftest import MAIN, chart, plotted

TITLE = "Your run among the measured runs"


def opened(key: str) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    at.button(key=f"lesson.{key}").click().run()
    assert not at.exception
    return at


def traces(spec: dict) -> dict[str, dict]:
    return {t.get("name"): t for t in spec["data"]}


def assert_band(spec: dict, ensemble: ensembles.Ensemble, run: str, series: str) -> None:
    band = ensemble.band(run, series)
    low = traces(spec)[f"{run}: {len(ensemble.members)} measured runs"]
    assert plotted(low["x"]) == list(band["step"]) and plotted(low["y"]) == pytest.approx(list(band["low"]))
    assert plotted(low["customdata"]) == pytest.approx(list(band["high"]))  # the hover's upper end


def test_a_lab_lesson_draws_its_runs_band_and_the_students_held_out_curve_over_it():
    at = opened("rnn-forgets")
    ensemble = ensembles.shipped("rnn-forgets")
    lab = at.session_state["lab"]
    lab.step()
    at.run()
    spec = chart(at, TITLE)
    assert_band(spec, ensemble, "rnn", "loss")
    mine = traces(spec)["rnn: yours"]
    held_out = lab.held_out.frame()
    assert plotted(mine["x"]) == list(held_out["step"]) and plotted(mine["y"]) == pytest.approx(list(held_out["loss"]))
    assert any(ensemble.describe() in c.value for c in at.caption)

    # The card's next move, the cell set to LSTM: the LSTM's band.
    lab.change(dataclasses.replace(lab.setup, model=dataclasses.replace(lab.setup.model, arch="lstm")))
    at.run()
    assert_band(chart(at, TITLE), ensemble, "lstm", "loss")
    # A network the lesson never measured: no band.
    lab.change(dataclasses.replace(lab.setup, model=dataclasses.replace(lab.setup.model, hidden_size=16)))
    at.run()
    assert not [c for c in at.get("plotly_chart") if TITLE in c.proto.spec]


def test_a_gradients_lesson_draws_the_ratio_band():
    at = opened("vanishing")
    assert_band(chart(at, TITLE), ensembles.shipped("vanishing"), "rnn", "ratio")


def test_a_comparison_lesson_draws_every_runs_band():
    lesson = BY_KEY["initialisation"]
    at = opened(lesson.key)
    ensemble = ensembles.shipped(lesson.key)
    at.button(key="compare_step").click().run()
    spec = chart(at, TITLE)
    comparison = at.session_state["comparison"]
    log = comparison.log_frame()
    for run in comparison.runs:
        assert_band(spec, ensemble, run.name, "loss")
        mine = traces(spec)[f"{run.name}: yours"]
        assert plotted(mine["y"]) == pytest.approx(list(log[log.run == run.name].loss))


@pytest.mark.parametrize("key, page_key", [("why-sqrt-dk", "scaling"), ("transfer", "transfer")])
def test_a_side_by_side_lesson_draws_its_runs_bands_by_the_pages_names(key, page_key):
    """Why √d_k and Transfer learning name their runs as the ensemble does, so each gets its band."""
    at = opened(key)
    ensemble = ensembles.shipped(key)
    at.button(key=f"{page_key}_step").click().run()
    assert not at.exception
    spec = chart(at, TITLE)
    runs = at.session_state[page_key].runs  # state.SCALING, state.TRANSFER
    assert {run.name for run in runs} <= set(ensemble.runs())
    for run in runs:
        assert_band(spec, ensemble, run.name, "metric")
