"""Whole-page runs first: while any session's page is being built, every session's training waits.

One process runs every session's script in threads that share one interpreter lock, so a page run
gets about 1/N of it while N sessions train: with 30 sessions playing, a control moved or a Pause
took 38-60 s to answer (benchmarks/README, section 12). Training steps run in torch with the lock
released; only the steps between them hold it. So a training loop that waits between two steps
while a page run is under way anywhere in the process gives that run the interpreter, and a student
who clicks is answered first; the class's training resumes when no page is being built. Each wait is
bounded, so a stream of clicks cannot stop training altogether. No streamlit here.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_changed = threading.Condition()
_under_way = 0  # whole-page runs started and not yet ended, in this process


@contextmanager
def page_run() -> Iterator[None]:
    """Around a whole-page run (app/main.py), or the teacher's board's refresh (what the class sees on
    the projector): training elsewhere waits until it ends."""
    global _under_way
    with _changed:
        _under_way += 1
    try:
        yield
    finally:
        with _changed:
            _under_way -= 1
            _changed.notify_all()


def under_way() -> int:
    return _under_way


def wait_for_page_runs(most: float) -> bool:
    """Wait until no whole-page run is under way, at most `most` s; True if none is."""
    with _changed:
        return _changed.wait_for(lambda: _under_way == 0, timeout=most)
