"""What every page's download buttons share. A download is made when clicked, by Streamlit, in
another thread than the page's run, and the browser gives up on it after 180 s (the frontend's
deferred-file timeout: "deferredFile timed out"). So a download reads what training publishes
whole after each step, without the lock: the histories (engine.History.kept), the logs
(BoundedRows), the recordings the page drew (Probes.recordings). It is the numbers of the figure
on the screen. Only what nothing has published yet (a page's first drawing, a restore that forgot
the recordings) is made under the lock, taken between two training steps (Playback.hold)."""
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


def published_or_held(trainee, published: Callable[[], T | None], make: Callable[[], T]) -> T:
    """published(), read without the lock: what the page drew. make() under the trainee's lock,
    between two training steps, only when nothing is published yet."""
    found = published()
    if found is not None:
        return found
    with trainee.hold():
        return make()


def chosen_recording(lab: Lab) -> Callable[[], tuple[engine.Recording, str | None]]:
    """A function giving the recording of the sample and stack chosen on the page now, and
    that stack (None for the first): the one the page drew (see published_or_held)."""
    index, stack = state.probe_index(), state.get(state.STACK)

    def recorded() -> tuple[engine.Recording, str | None]:
        rec = published_or_held(lab, lambda: lab.probes.drawn_recording(index), lambda: lab.recording(index))
        return rec, stack if stack in rec.stacks else None

    return recorded


def held(lab, make: Callable, *args):
    """make(*args) under the lab's (or a comparison's) lock, taken between two training steps even
    while it plays (Playback.hold): for what must be read as it is now (a checkpoint's weights).
    Prefer published_or_held for anything a page draws."""
    with lab.hold():
        return make(*args)


def button_row():
    """A row for download buttons that wraps onto a new line when the page is narrow: in fixed
    columns, at 1024 px, their labels were cut ("Gradients over training (.c...")."""
    return st.container(horizontal=True)


def stem(lab: Lab) -> str:
    """The start of every file name: the task and the cell, e.g. unrolled-adding-lstm."""
    return f"unrolled-{lab.setup.task}-{lab.setup.model.arch}"
