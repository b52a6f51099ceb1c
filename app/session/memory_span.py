"""Short-term memory, measured once (benchmarks/memory_span.py writes app/data/memory_span.json;
tests/engine/test_memory_span.py re-measures two of its runs): each cell's best held-out accuracy
on delayed recall within the budget at each lag, and the longest lag it learns. Read by Build &
Train's chart and the recall-lag lesson's text, so no figure of it is typed. No Streamlit here."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd

import engine

SHIPPED = Path(__file__).resolve().parents[1] / "data" / "memory_span.json"


def measured(path: Path = SHIPPED) -> tuple[pd.DataFrame, dict]:
    """(one row per cell and lag tried: the mean, lowest and highest over the seeds tried of each run's
    best held-out accuracy, how many seeds were tried and learned it, and the slowest of them's step;
    the file's settings, when and with which torch it was measured)."""
    data = json.loads(path.read_text())
    runs = pd.DataFrame(data["rows"])
    runs["best"] = [max(accuracy for _, accuracy in curve) for curve in runs["accuracy"]]
    runs["learned"] = runs["learned_at"].notna()
    means = runs.groupby(["cell", "lag"]).agg(
        best=("best", "mean"), lowest=("best", "min"), highest=("best", "max"), tried=("seed", "nunique"),
        learned=("learned", "sum"), slowest=("learned_at", "max"),
    ).reset_index()
    return means, {k: v for k, v in data.items() if k != "rows"}


@functools.cache
def shipped() -> tuple[pd.DataFrame, dict]:
    """The shipped file's measurements, read once per server."""
    return measured()


def longest_learned(means: pd.DataFrame, cell: str, settings: dict) -> int | None:
    """The longest lag up to which every lag was learned by every seed (None: not even the shortest);
    a lag a seed was not tried at counts as not learned."""
    seeds = len(settings["seeds"])
    learned = set(means[(means["cell"] == cell) & (means["learned"] == seeds)]["lag"])
    longest = None
    for lag in settings["lags"]:
        if lag not in learned:
            return longest
        longest = lag
    return longest


def spans(means: pd.DataFrame, settings: dict) -> dict[str, int | None]:
    """Each cell's longest lag learned, in the file's order of cells."""
    return {cell: longest_learned(means, cell, settings) for cell in settings["cells"]}


@functools.cache
def shipped_spans() -> dict[str, int | None]:
    """spans() of the shipped file, worked out once per server (the page and a lesson's text read it)."""
    means, meta = shipped()
    return spans(means, meta["settings"])


def network(settings: dict, cell: str) -> engine.ModelConfig:
    """The network a measurement of `cell` trains: the file's model with the cell's changes."""
    return engine.ModelConfig.from_dict({**settings["model"], **settings["cells"][cell]})


def recall_task(settings: dict, lag: int) -> engine.Task:
    """Delayed recall at `lag` with the file's symbols and distractors."""
    return engine.make_task(settings["task"], lag=lag, symbols=settings["symbols"], distractors=settings["distractors"])


def measures(settings: dict, setup) -> bool:
    """Whether the student's setup (a link.Setup) is one the file measured, at some lag: the task's
    symbols and distractors, one of its cells, its training."""
    params = setup.task_params
    return (setup.task == settings["task"] and (params["symbols"], params["distractors"])
            == (settings["symbols"], settings["distractors"])
            and any(setup.model == network(settings, cell) for cell in settings["cells"])
            and setup.train == engine.TrainConfig.from_dict(settings["train"]))
