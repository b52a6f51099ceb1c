"""Each lesson's runs, trained as its page trains them, and the figures its card quotes measured on them.

`measure(key, seed)` trains the lesson's setup with that seed (the task's data, the start and the
batches all follow it) and returns a Measured: the values the lesson's claims name (its data file,
app/data/lessons/<key>.toml) and the curves its page draws (held-out loss or metric, or the share
of the gradient reaching the first step, every 25 steps). benchmarks/lesson_ensembles.py runs it
over seeds and kernel paths and ships the results (app/data/ensembles/<key>.json), which the card
quotes and the page draws as a band; the tests check the claims against the shipped runs, and the
full tier trains the lessons again and checks them against both. No Streamlit here.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from app.session.link import Setup

Curve = list[tuple[int, float]]  # (step, value), in step order


@dataclass
class Measured:
    values: dict[str, float | None] = field(default_factory=dict)  # "run.what" -> value; None: never happened
    curves: dict[str, dict[str, Curve]] = field(default_factory=dict)  # run -> series ("loss", ...) -> curve
    links: dict[str, dict[str, str]] = field(default_factory=dict)  # run -> its Lab's link, seed left out

    def add_curves(self, run: str, log: pd.DataFrame, series: tuple[str, ...], setup: Setup | None = None) -> None:
        """The `series` columns of a log with a step column, as this run's curves; `setup`: the Lab's
        whose run it is (a page finds the band of the student's setup by it)."""
        self.curves[run] = {name: [(int(s), float(v)) for s, v in zip(log["step"], log[name])] for name in series}
        if setup is not None:
            self.links[run] = unseeded(setup)

    def to_dict(self) -> dict:
        return {"values": self.values, "links": self.links,
                "curves": {run: {name: [list(point) for point in curve] for name, curve in series.items()}
                           for run, series in self.curves.items()}}


def unseeded(setup: Setup) -> dict[str, str]:
    """A setup's link without its seed: the runs of an ensemble differ only in it."""
    return {name: value for name, value in setup.to_query().items() if name != "seed"}


MEASURES: dict[str, Callable[[int], Measured]] = {}
# Lessons measured on the same runs, which one process trains once (recurrent.adding_labs).
SHARED_RUNS = (("rnn-forgets", "vanishing"),)


def measures_for(*keys: str):
    """Registers a function seed -> Measured as the measurement of these lessons."""
    def register(function: Callable[[int], Measured]) -> Callable[[int], Measured]:
        for key in keys:
            MEASURES[key] = function
        return function
    return register


def measure(key: str, seed: int) -> Measured:
    """Lesson `key`'s runs with this seed, measured (minutes for the long lessons), with the values of
    its ratio claims worked out from what was measured."""
    from app.session.lessons import BY_KEY

    measured = MEASURES[key](seed)
    measured.values |= BY_KEY[key].derived(measured.values)
    return measured


def seeded(setup: Setup, seed: int) -> Setup:
    return dataclasses.replace(setup, train=dataclasses.replace(setup.train, seed=seed))


def first_step(series: pd.Series, condition: pd.Series) -> int | None:
    """The first step (the index) where `condition` holds, or None."""
    hits = series.index[condition.to_numpy()]
    return int(hits.min()) if len(hits) else None


def last_step(series: pd.Series, condition: pd.Series) -> int | None:
    hits = series.index[condition.to_numpy()]
    return int(hits.max()) if len(hits) else None


# The lessons' modules register themselves on import.
from app.session.lesson_runs import attention, comparisons, language, recurrent, transformers  # noqa: E402, F401
