"""A log that stays the same size however long a student trains: the latest rows all kept, older
ones at a stride that doubles as the log fills (the first row always kept), as the Trainer's
History thins its steps. The held-out log, the gradient log and each compared cell's log use it,
so a page reading one costs the same at step 100 and at step 1,000,000. No Streamlit here.
"""
from __future__ import annotations

import numpy as np

MAX_ROWS = 1024  # rows kept; the latest quarter always whole


class BoundedRows:
    """Rows (dicts) in the order they came. Appends come from one thread at a time (the caller
    holds the session's lock); readers may read without it: `rows()` copies a list that is only
    appended to, or replaced whole when thinned."""

    def __init__(self, max_rows: int = MAX_ROWS):
        self.max_rows = max_rows
        self.kept: list[tuple[int, dict]] = []  # (arrival number, row)
        self.arrived, self.stride = 0, 1

    def append(self, row: dict) -> None:
        if len(self.kept) == self.max_rows:
            self.thin()
        self.kept.append((self.arrived, row))
        self.arrived += 1

    def thin(self) -> None:
        """Keep the latest quarter, and older rows at the stride, doubled until at most half the rows
        hold them (arrival 0, the first row, is a multiple of every stride). That frees at least a
        quarter of the rows, so thinning costs O(1) a row on average."""
        old = len(self.kept) - self.max_rows // 4
        arrivals = np.array([n for n, _ in self.kept[:old]])  # [old]
        stride = self.stride
        while (arrivals % stride == 0).sum() > self.max_rows // 2:
            stride *= 2
        self.kept = [self.kept[i] for i in np.flatnonzero(arrivals % stride == 0)] + self.kept[old:]
        self.stride = stride

    def rows(self) -> list[dict]:
        return [row for _, row in list(self.kept)]

    def __len__(self) -> int:
        return len(self.kept)

    @property
    def last(self) -> dict | None:
        kept = self.kept
        return kept[-1][1] if kept else None
