"""Short-term memory, one number a cell (issue 16): the longest lag at which each cell learns delayed
recall (name the symbol seen `lag` steps ago; engine/tasks/recall.py) within the recall lesson's
budget. Each cell is the "recall-lag" lesson's network (64 units, Adam at lr 1e-3, batch 64, clip
1.0, 2000 steps) with only the cell changed: a tanh RNN, a GRU, an LSTM as PyTorch starts it, and
an LSTM whose forget gate starts open (bias 3, the recall task's preset). Every EVAL_EVERY steps it
names the signal of 1,000 held-out sequences (Trainer.evaluate, as the lessons' tests score them);
a run that names LEARNED of them has learned that lag and stops there. A seed is tried at longer
and longer lags until it fails two lags in a row (a longer lag is then counted as not learned,
not trained: 4-6 minutes a run saved, on the lags nothing learns).

Writes the measurements with their settings to app/data/memory_span.json, which Build & Train
plots beside the recall task and the "recall-lag" lesson quotes, and the table to the end of
benchmarks/README.md (section 13, replaced if there); tests/engine/test_memory_span.py re-measures
two runs. Two worker processes, one torch thread each, kernels capped as the tests cap them
(pretrained/kernels.py), so the runs repeat bit for bit there. --quick checks the script runs
and writes nothing.

    PYTHONPATH=. python benchmarks/memory_span.py [--quick]
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from timing import load_average, paragraph, replace_section, run_alone, table

from app.session import memory_span
from pretrained import kernels

ROOT = Path(__file__).resolve().parent.parent
JSON_PATH = ROOT / "app" / "data" / "memory_span.json"
README = ROOT / "benchmarks" / "README.md"
HEADING = "## 13. Short-term memory: the longest lag each cell learns (issue 16)"

TASK = "recall"
LAGS = (5, 10, 15, 20, 30, 40, 50, 75, 100, 150)
# label: the changes to the recall task's preset network (an LSTM of 64 units with forget bias 3); the
# tanh RNN is then the recall-lag lesson's network
CELLS = {
    "tanh RNN": {"arch": "rnn", "forget_bias": None},
    "GRU": {"arch": "gru", "forget_bias": None},
    "LSTM": {"arch": "lstm", "forget_bias": None},
    "LSTM, forget bias 3": {"arch": "lstm", "forget_bias": 3.0},
}
STEPS = 2000
SEEDS = (0, 1, 2)
EVAL_EVERY = 100
HELD_OUT = 1000
LEARNED = 0.95  # share of the held-out sequences named: "learned"
GIVE_UP = 2  # lags failed in a row after which a seed is not tried at longer ones


def settings(steps: int = STEPS) -> dict:
    """Everything a re-measurement needs, as the JSON keeps it."""
    import engine  # after kernels.pin(): nothing here computes, the workers do

    preset, default = engine.TASKS[TASK].preset, engine.make_task(TASK)
    return {
        "task": TASK, "symbols": default.symbols, "distractors": default.distractors, "lags": list(LAGS),
        "cells": CELLS, "steps": steps,
        "seeds": list(SEEDS),
        "eval_every": EVAL_EVERY, "held_out": HELD_OUT, "learned": LEARNED, "give_up": GIVE_UP,
        "model": preset.model.to_dict(), "train": preset.train.to_dict(), "torch_threads": 1,
        "kernels": kernels.KERNELS,
    }


def train(cell: str, lag: int, seed: int, s: dict) -> dict:
    """One run of `cell` from `seed` on recall at `lag`: its held-out accuracy every s["eval_every"] steps
    (and at step 0) until it names s["learned"] of them or has trained s["steps"]."""
    import torch

    import engine

    task = memory_span.recall_task(s, lag)
    model = engine.build_model(memory_span.network(s, cell), task, seed=seed)
    trainer = engine.Trainer(model, task, dataclasses.replace(engine.TrainConfig.from_dict(s["train"]), seed=seed))
    curve = []
    while True:
        with torch.no_grad():
            curve.append([trainer.steps_done, trainer.evaluate(s["held_out"])[1]])
        if curve[-1][1] >= s["learned"] or trainer.steps_done >= s["steps"]:
            return {"accuracy": curve, "learned_at": trainer.steps_done if curve[-1][1] >= s["learned"] else None}
        trainer.step(s["eval_every"])


def seed_over_lags(cell: str, seed: int, s: dict) -> list[dict]:
    """A worker's job: one cell and seed at each lag in turn until GIVE_UP lags fail in a row."""
    import torch

    torch.set_num_threads(s["torch_threads"])
    rows, failed = [], 0
    for lag in s["lags"]:
        start = time.perf_counter()
        run = train(cell, lag, seed, s)
        rows.append({"cell": cell, "seed": seed, "lag": lag, **run, "seconds": round(time.perf_counter() - start, 1)})
        failed = 0 if run["learned_at"] is not None else failed + 1
        if failed == s["give_up"]:
            break
    return rows


def markdown(means, s: dict, stamp: str, elapsed: float) -> str:
    """The table of every cell and lag (the frame app.session.memory_span.measured reads from the file)."""
    def cell_text(cell: str, lag: int) -> str:
        row = means[(means["cell"] == cell) & (means["lag"] == lag)]
        if row.empty:
            return "not tried"
        r = row.iloc[0]
        if r["learned"] == len(s["seeds"]):
            return f"{r['slowest']:.0f}"
        return f"{r['learned']} of {r['tried']} ({100 * r['lowest']:.0f}-{100 * r['highest']:.0f}%)"

    header = ["lag", *s["cells"]]
    cells = [[lag, *(cell_text(cell, lag) for cell in s["cells"])] for lag in s["lags"]]
    spans = ", ".join(f"{cell} {memory_span.longest_learned(means, cell, s)}" for cell in s["cells"])
    t = s["train"]
    prose = (
        "`PYTHONPATH=. python benchmarks/memory_span.py` (section `memory-span` of `run_all.py`): delayed "
        f"recall of {s['symbols']} symbols at each lag, the recall-lag lesson's network ({s['model']['hidden_size']} "
        f"units; {t['optimizer']} at lr {t['lr']}, batch {t['batch_size']}, clip {t['clip_norm']}) with each cell, "
        f"from seeds {', '.join(map(str, s['seeds']))}, up to {s['steps']} steps; every {s['eval_every']} steps it "
        f"names the signal of {s['held_out']} held-out sequences, and a run that names {100 * s['learned']:.0f}% "
        "has learned the lag. A cell's entry: the step by which every seed had learned it, else how many of the "
        "seeds tried learned it (the range of their best held-out accuracy; chance "
        f"{100 / s['symbols']:.0f}%); a seed that failed {s['give_up']} lags in a row was not tried at longer ones. "
        "Kernels capped at AVX2, one torch thread, two worker processes. The same runs are in "
        "app/data/memory_span.json for Build & Train's chart and the recall-lag lesson; "
        f"tests/engine/test_memory_span.py re-measures two runs. {stamp}; the whole run took {elapsed / 60:.0f} min."
    )
    grid = table("", header, cells).split("\n", 2)[2]
    reading = paragraph(f"The longest lag every seed learned within the budget: {spans}.")
    return f"{HEADING}\n\n{paragraph(prose)}\n\n{grid}\n{reading}\n"


def run(quick: bool) -> str:
    kernels.pin()  # inherited by the workers, which import torch afresh (spawned)
    s = settings(steps=200 if quick else STEPS)
    if quick:
        s = {**s, "lags": [5, 10], "seeds": [0]}
    start, load_at_start = time.perf_counter(), load_average()
    jobs = [(cell, seed) for seed in s["seeds"] for cell in s["cells"]]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        rows = [row for part in pool.map(seed_over_lags, *zip(*jobs), [s] * len(jobs)) for row in part]
    elapsed = time.perf_counter() - start
    now = datetime.datetime.now(datetime.UTC)
    stamp = (f"Measured {now:%Y-%m-%d %H:%M} UTC, load average (1, 5, 15 min) {load_at_start} at the start and "
             f"{load_average()} at the end (the accuracies do not depend on it, the seconds do)")
    import torch

    record = {"measured": f"{now:%Y-%m-%d %H:%M} UTC", "torch": torch.__version__, "settings": s,
              "rows_are": "one run each: settings.model with the row's cell's changes, seeded by the row's seed, on "
                          "recall at the row's lag; accuracy: [step, share of the held-out sequences named] every "
                          "eval_every steps until learned or settings.steps; learned_at: the step it first named "
                          "settings.learned of them, null if never",
              "rows": rows}
    with tempfile.TemporaryDirectory() as scratch:  # --quick writes nothing
        path = Path(scratch) / "memory_span.json" if quick else JSON_PATH
        path.write_text(json.dumps(record, indent=1) + "\n")
        section = markdown(memory_span.measured(path)[0], s, stamp, elapsed)
    if not quick:
        replace_section(README, HEADING, section)
    return section


if __name__ == "__main__":
    run_alone(run, "lags 5 and 10, seed 0, 200 steps; writes nothing")
