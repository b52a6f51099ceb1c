"""What every page's download buttons share. A download is made when clicked, in another thread
than the page's run, so it reads the model under the Lab's lock, as it is then."""
from __future__ import annotations

from collections.abc import Callable

import engine
from app.session.lab import Lab
from app.widgets import state

EXPANDER = "Download the numbers and the figure"
PNG_NOTE = "Every chart also saves as PNG from the camera icon in its top-right corner."


def chosen_recording(lab: Lab) -> Callable[[], tuple[engine.Recording, str | None]]:
    """A function giving the recording of the sample and stack chosen on the page now, and
    that stack (None for the first), made when called."""
    index, stack = state.probe_index(), state.get(state.STACK)

    def recorded() -> tuple[engine.Recording, str | None]:
        with lab.lock:
            rec = lab.recording(index)
        return rec, stack if stack in rec.stacks else None

    return recorded


def locked(lab, make: Callable, *args):
    """make(*args) under the lab's (or a comparison's) lock: a download made on click."""
    with lab.lock:
        return make(*args)


def stem(lab: Lab) -> str:
    """The start of every file name: the task and the cell, e.g. unrolled-adding-lstm."""
    return f"unrolled-{lab.setup.task}-{lab.setup.model.arch}"
