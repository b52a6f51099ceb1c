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
from typing import NamedTuple

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


class Kept(NamedTuple):
    """A history's rows as of one step, published whole after every step: a reader in another
    thread (a page, a download) takes `history.kept` and reads its first `rows` rows without the
    training lock. The trainer writes only past them, and thinning writes into new arrays, so what
    a reader took never changes under it."""

    steps: np.ndarray  # [max_rows], the first `rows` meant
    values: np.ndarray  # [max_rows, 4]
    diverged: np.ndarray  # [max_rows]
    rows: int


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
        self.kept = Kept(*self.buffers(), rows=0)
        self.total = self.applied = self.clipped = 0
        self.last: StepStats | None = None

    def buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Empty arrays for max_rows rows: steps [max_rows], values [max_rows, 4], diverged [max_rows]."""
        rows = self.max_rows
        return np.zeros(rows, dtype=np.int64), np.zeros((rows, len(VALUES)), dtype=np.float64), np.zeros(rows, bool)

    @property
    def rows(self) -> int:
        return self.kept.rows

    def add(self, stats: StepStats) -> None:
        if self.rows == self.max_rows:
            self.thin()
        steps, values, diverged, row = self.kept
        steps[row] = stats.step  # past the rows published: no reader looks here yet
        values[row] = (stats.loss, stats.metric, stats.grad_norm, stats.grad_norm_clipped)
        diverged[row] = stats.diverged
        self.kept = Kept(steps, values, diverged, row + 1)
        self.total += 1
        self.applied += not stats.diverged
        self.clipped += not stats.diverged and stats.grad_norm_clipped < stats.grad_norm
        self.last = stats

    def thin(self) -> None:
        """Thin the rows older than the recent ones (see `thinned`; step 1 arrived first)."""
        steps, values, diverged, n = self.kept
        old = n - self.recent
        kept, self.stride = thinned(steps[:old] - 1, self.stride, self.max_rows)
        rows = np.concatenate([kept, np.arange(old, n)])  # [kept + recent]
        new = self.buffers()  # a reader may still hold the old arrays
        for into, was in zip(new, (steps, values, diverged)):
            into[:len(rows)] = was[rows]
        self.kept = Kept(*new, rows=len(rows))

    def __len__(self) -> int:
        return self.rows

    def __getitem__(self, index):
        steps, values, diverged, n = self.kept
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(n))]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"history index {index} out of range: {n} rows kept")
        return StepStats(int(steps[index]), *map(float, values[index]), bool(diverged[index]))

    def frame(self) -> pd.DataFrame:
        """The kept rows, one per step, columns step, loss, metric, grad_norm, grad_norm_clipped,
        diverged (there even before the first step). A copy: training on does not change it. Needs
        no lock: it reads the rows published (`kept`)."""
        steps, values, diverged, n = self.kept
        columns = {"step": steps[:n].copy()}
        columns.update({name: values[:n, i].copy() for i, name in enumerate(VALUES)})
        columns["diverged"] = diverged[:n].copy()
        return pd.DataFrame(columns, columns=list(COLUMNS))
