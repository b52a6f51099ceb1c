"""A training run's history, columnar and bounded: what the loss and gradient charts draw.

A run can last hundreds of thousands of steps while a page redraws its charts every fraction of a
second, so the history keeps at most `max_rows` rows however long the run: the most recent steps
all, and older steps at one stride that doubles whenever the rows run out (step 1 always among
them), so the far past is sampled evenly. TensorBoard keeps its scalars the same way in spirit (a
bounded reservoir that always holds the latest step). Its frame costs the same at step 10 and at
step 10 million.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .config import check_int

MAX_ROWS = 4096  # the default bound
ROW_LIMITS = (8, 10_000_000)  # what a bound may be
VALUES = ("loss", "metric", "grad_norm", "grad_norm_clipped")  # the float columns, in StepStats' order


@dataclass(frozen=True)
class StepStats:
    step: int  # 1-based count of steps this trainer has applied (or tried, if it diverged)
    loss: float
    metric: float  # the task's metric on this step's batch
    grad_norm: float  # global L2 norm of the gradient before clipping
    grad_norm_clipped: float  # ... and after clipping (equal when clipping is off)
    diverged: bool


COLUMNS = ("step", *VALUES, "diverged")


def thinned(arrivals: np.ndarray, stride: int, max_rows: int) -> tuple[np.ndarray, int]:
    """Which of a bounded log's older rows to keep, by their arrival numbers ([old], 0 first):
    those at a multiple of the stride, doubled until at most half of `max_rows` are. Doubling keeps
    rows already thinned evenly spaced, arrival 0 is a multiple of every stride, and at least a
    quarter of the rows are freed, so thinning costs O(1) a row on average. Returns the indices
    into `arrivals` kept ([kept]) and the stride."""
    keep = arrivals % stride == 0  # [old]
    while keep.sum() > max_rows // 2:
        stride *= 2
        keep = arrivals % stride == 0
    return np.flatnonzero(keep), stride


class History(Sequence):
    """The kept StepStats, oldest first, read-only from outside (Trainer adds to it). Indexing
    and iterating give StepStats; `frame()` gives them as a DataFrame; `total` counts every step
    added, kept or not; `last` is the latest (always kept). `applied` and `clipped` count, over
    every step, those applied (not diverged) and those clipping made smaller: a share of clipped
    steps read from the kept rows alone would overweight the recent ones."""

    def __init__(self, max_rows: int = MAX_ROWS):
        check_int("max_rows", max_rows, *ROW_LIMITS)
        self.max_rows = max_rows
        self.recent = max_rows // 4  # this many latest rows are never thinned
        self.stride = 1  # rows older than those are kept where (step - 1) % stride == 0
        self.steps = np.zeros(max_rows, dtype=np.int64)  # [max_rows]
        self.values = np.zeros((max_rows, len(VALUES)), dtype=np.float64)  # [max_rows, 4]
        self.diverged = np.zeros(max_rows, dtype=bool)  # [max_rows]
        self.rows = 0
        self.total = self.applied = self.clipped = 0
        self.last: StepStats | None = None

    def add(self, stats: StepStats) -> None:
        if self.rows == self.max_rows:
            self.thin()
        row = self.rows
        self.steps[row] = stats.step
        self.values[row] = (stats.loss, stats.metric, stats.grad_norm, stats.grad_norm_clipped)
        self.diverged[row] = stats.diverged
        self.rows += 1
        self.total += 1
        self.applied += not stats.diverged
        self.clipped += not stats.diverged and stats.grad_norm_clipped < stats.grad_norm
        self.last = stats

    def thin(self) -> None:
        """Thin the rows older than the recent ones (see `thinned`; step 1 arrived first)."""
        old = self.rows - self.recent
        kept, self.stride = thinned(self.steps[:old] - 1, self.stride, self.max_rows)
        rows = np.concatenate([kept, np.arange(old, self.rows)])  # [kept + recent]
        n = len(rows)
        self.steps[:n], self.values[:n], self.diverged[:n] = self.steps[rows], self.values[rows], self.diverged[rows]
        self.rows = n

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.rows))]
        if index < 0:
            index += self.rows
        if not 0 <= index < self.rows:
            raise IndexError(f"history index {index} out of range: {self.rows} rows kept")
        return StepStats(int(self.steps[index]), *map(float, self.values[index]), bool(self.diverged[index]))

    def frame(self) -> pd.DataFrame:
        """The kept rows, one per step, columns step, loss, metric, grad_norm, grad_norm_clipped,
        diverged (there even before the first step). A copy: training on does not change it."""
        n = self.rows
        columns = {"step": self.steps[:n].copy()}
        columns.update({name: self.values[:n, i].copy() for i, name in enumerate(VALUES)})
        columns["diverged"] = self.diverged[:n].copy()
        return pd.DataFrame(columns, columns=list(COLUMNS))
