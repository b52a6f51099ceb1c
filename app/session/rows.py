"""A log that stays the same size however long a student trains: the latest rows all kept, older
ones at a stride that doubles as the log fills (the first row always kept), as the Trainer's
History thins its steps. The held-out log, the gradient log and each compared cell's log use it,
so a page reading one costs the same at step 100 and at step 1,000,000. No Streamlit here.
"""
from __future__ import annotations

import numpy as np

from engine.history import thinned

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
        """Keep the latest quarter whole, and the older rows as the Trainer's History does (`thinned`)."""
        old = len(self.kept) - self.max_rows // 4
        kept, self.stride = thinned(np.array([n for n, _ in self.kept[:old]]), self.stride, self.max_rows)
        self.kept = [self.kept[i] for i in kept] + self.kept[old:]

    def rows(self) -> list[dict]:
        return [row for _, row in list(self.kept)]

    def __len__(self) -> int:
        return len(self.kept)

    @property
    def last(self) -> dict | None:
        kept = self.kept
        return kept[-1][1] if kept else None
