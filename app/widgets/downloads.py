"""What every page's download buttons share. A download is made when clicked, by Streamlit, in
another thread than the page's run, and the browser gives up on it after 180 s (the frontend's
deferred-file timeout: "deferredFile timed out"). So a download never waits for a lock that a
playing training loop takes step after step: it reads what is published without the lock (the
gradient logs), or makes its numbers under the lock when the lock is free at that moment, and
otherwise takes what the page drew last."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import streamlit as st

import engine
from app.session.lab import Lab
from app.widgets import state

EXPANDER = "Download the numbers and the figure"
PNG_NOTE = "Every chart also saves as PNG from the camera icon in its top-right corner."
T = TypeVar("T")


def now_or_drawn(trainee, make: Callable[[], T], drawn: Callable[[], T | None]) -> T:
    """make() under the lab's (or a comparison's) lock if no one holds it now; else drawn(), what
    the page drew last (read without the lock), when there is one. Waits for the lock only when
    nothing was drawn yet, which a page that shows the button has done."""
    if trainee.lock.acquire(blocking=False):
        try:
            return make()
        finally:
            trainee.lock.release()
    last = drawn()
    if last is not None:
        return last
    with trainee.hold():  # nothing drawn yet (a restore forgot it): between two training steps
        return make()


def chosen_recording(lab: Lab) -> Callable[[], tuple[engine.Recording, str | None]]:
    """A function giving the recording of the sample and stack chosen on the page now, and
    that stack (None for the first), made when called (or as drawn last, see now_or_drawn)."""
    index, stack = state.probe_index(), state.get(state.STACK)

    def recorded() -> tuple[engine.Recording, str | None]:
        rec = now_or_drawn(lab, lambda: lab.recording(index), lambda: lab.probes.drawn_recording(index))
        return rec, stack if stack in rec.stacks else None

    return recorded


def held(lab, make: Callable, *args):
    """make(*args) under the lab's (or a comparison's) lock, taken between two training steps even
    while it plays (Playback.hold): for what must be read as it is now (a checkpoint's weights).
    Prefer now_or_drawn for anything a page draws."""
    with lab.hold():
        return make(*args)


def button_row():
    """A row for download buttons that wraps onto a new line when the page is narrow: in fixed
    columns, at 1024 px, their labels were cut ("Gradients over training (.c...")."""
    return st.container(horizontal=True)


def stem(lab: Lab) -> str:
    """The start of every file name: the task and the cell, e.g. unrolled-adding-lstm."""
    return f"unrolled-{lab.setup.task}-{lab.setup.model.arch}"
