"""The Build & Train page's tick: every 0.4 s while training it reads `lab.trainer.history_frame()`
and draws `training_curves` and `gradient_norm_curve` from it. Measured at 0 to 1M steps trained,
against the way it was before issue 10 (a list of every StepStats, made into a DataFrame each tick),
in one process, the two ways taking turns.

The Trainer's History is filled directly with plausible StepStats (a loss decaying towards a
floor with noise, its R², a gradient norm clipped at the preset's clip_norm), not by training:
a million real steps would take about an hour. The History neither knows nor cares where its rows
come from; the figures draw the same columns either way.

    PYTHONPATH=. python benchmarks/history_tick.py [--quick]
"""
from __future__ import annotations

import tracemalloc
from dataclasses import asdict, fields

import numpy as np
import pandas as pd
from timing import interleaved, run_alone, table

from app.charts.training import gradient_norm_curve, training_curves
from app.session.lab import Lab
from app.session.link import DEFAULT
from engine.history import StepStats

STEP_COUNTS = (0, 1_000, 10_000, 200_000, 1_000_000)
QUICK_STEP_COUNTS = (0, 1_000, 10_000)


def plausible_stats(n: int, baseline: float, clip: float | None, seed: int = 0) -> list[StepStats]:
    """n StepStats of a run that learns: loss from the baseline down to 2% of it (time constant
    n/10, at least 200 steps), lognormal noise, the R² that goes with it, gradient norms around
    0.5 that shrink as it learns, clipped at `clip`. No step diverges (a Trainer stops at the first)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, n + 1)  # [n]
    progress = np.exp(-steps / max(200, n / 10))  # [n]
    loss = baseline * (0.02 + 0.98 * progress) * rng.lognormal(0, 0.2, n)  # [n]
    metric = 1 - loss / baseline  # [n]: R² against predicting the mean
    grad = (0.05 + 0.5 * progress) * rng.lognormal(0, 0.5, n)  # [n]
    clipped = np.minimum(grad, clip) if clip is not None else grad  # [n]
    return [StepStats(int(s), float(a), float(b), float(c), float(d), False)
            for s, a, b, c, d in zip(steps, loss, metric, grad, clipped)]


def old_frame(history: list[StepStats]) -> pd.DataFrame:
    """Trainer.history_frame before issue 10 (engine/training.py at 06cd0c3), the reference:
    history was a list of every StepStats."""
    return pd.DataFrame([asdict(s) for s in history], columns=[f.name for f in fields(StepStats)])


def traced(build):
    """(what build() returns, bytes it left allocated), by tracemalloc."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    value = build()
    kept = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return value, kept


def fill(history, stats: list[StepStats]) -> None:
    for s in stats:
        history.add(s)


def row_for(n: int, repeats: int, budget: float) -> list:
    lab = Lab(DEFAULT)  # the app's default session: adding problem, LSTM H=64
    trainer, task, clip = lab.trainer, lab.task, lab.setup.train.clip_norm
    metric, baseline = task.metric_name, task.baseline_loss
    stats, old_bytes = traced(lambda: plausible_stats(n, baseline, clip))  # the old history: this list
    _, fill_bytes = traced(lambda: fill(trainer.history, stats))
    h = trainer.history
    new_bytes = h.steps.nbytes + h.values.nbytes + h.diverged.nbytes  # allocated when the Trainer is made
    new, old = trainer.history_frame(), old_frame(stats)

    def figures(frame):
        return lambda: (training_curves(frame, metric, baseline), gradient_norm_curve(frame, clip))

    times = interleaved({
        "new frame": trainer.history_frame, "new figures": figures(new),
        "old frame": lambda: old_frame(stats), "old figures": figures(old),
    }, repeats, budget)
    ms = {k: v * 1e3 for k, v in times.items()}
    new_tick, old_tick = ms["new frame"] + ms["new figures"], ms["old frame"] + ms["old figures"]
    return [f"{trainer.steps_done:,}", len(new), ms["new frame"], ms["new figures"], new_tick,
            f"{new_bytes / 1e6:.3f} (+{fill_bytes / 1e3:.0f} kB)",
            ms["old frame"], ms["old figures"], old_tick, old_bytes / 1e6, old_tick / new_tick]


def run(quick: bool) -> str:
    repeats, budget = (3, 0.05) if quick else (5, 0.3)
    rows = [row_for(n, repeats, budget) for n in (QUICK_STEP_COUNTS if quick else STEP_COUNTS)]
    return table(
        "The Build & Train tick: history_frame() and the two training figures, bounded History vs the old list",
        ["steps trained", "rows kept", "history_frame ms", "figures ms", "tick ms",
         "History MB (columns; growth while filling)", "old: DataFrame ms", "old: figures ms", "old: tick ms",
         "old: list MB", "old tick / new tick"], rows)


if __name__ == "__main__":
    run_alone(run, "0, 1k and 10k steps only; fewer repeats")
