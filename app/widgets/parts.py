"""The part picker every look-inside page shares: which probe sample, stack, layer and direction
to open up. One set of keys (state.py), so a choice made on one page holds on the next."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

import engine
from app.session.lab import Lab
from app.session.probes import PROBE_SAMPLES
from app.widgets import state

DIRECTIONS = ["forward", "backward"]


@dataclass(frozen=True)
class Chosen:
    """What the picker points at, kept in range for the model as it is."""

    index: int  # the probe sample
    rec: engine.Recording
    stack: str | None  # None: the recording's first (or only) stack
    trace: engine.StackTrace
    layer: int
    direction: int  # 0 forward, 1 backward


def recorded_caption(lab: Lab, index: int) -> None:
    """When and on what the pictures were recorded, and how well the network does on held-out
    data there (a lesson that promises "right every time" shows it on the page it opens)."""
    held = lab.held_out.log.last
    score = "" if held is None else (
        f" Held-out {lab.task.metric_name} {held['metric']:.3f}, loss {held['loss']:.4g} (at step {held['step']:,}).")
    st.caption(f"Recorded at step {lab.probes.recorded_at:,} on sample {index}.{score}")


def chosen(lab: Lab) -> Chosen:
    index = state.probe_index()
    rec = lab.recording(index)
    stack = state.get(state.STACK)
    stack = stack if stack in rec.stacks else None
    trace = rec.stacks[stack] if stack else rec.main
    layers, directions = trace.hidden.shape[:2]
    return Chosen(index, rec, stack, trace, min(state.layer(), layers - 1), min(state.direction(), directions - 1))


def pick(lab: Lab, layer: str | None = "Layer", direction: str | None = "Direction", horizontal: bool = True
         ) -> Chosen:
    """Draw the picker: the sample always, the stack when the model has more than one, and a
    layer and a direction (with these labels; None leaves one out) where there is a choice.
    Side by side, or one under the other (horizontal=False). Returns what is chosen."""
    boxes = st.columns(4) if horizontal else [st.container() for _ in range(4)]
    boxes[0].number_input(
        "Sample to open up", min_value=0, max_value=PROBE_SAMPLES - 1, step=1, key=state.PROBE_INDEX,
        persist_state="session", help="one of a few fixed samples the model never trains on",
    )
    stacks = list(lab.recording(state.probe_index()).stacks)
    if len(stacks) > 1:
        boxes[1].radio("Stack", stacks, key=state.STACK, horizontal=True, persist_state="session")
    part = chosen(lab)
    layers, directions = part.trace.hidden.shape[:2]
    if state.layer() > layers - 1:  # a choice made on a deeper model: its widget would refuse it
        st.session_state[state.LAYER] = layers - 1
    if layer and layers > 1:
        boxes[2].number_input(layer, min_value=0, max_value=layers - 1, step=1, key=state.LAYER,
                              persist_state="session")
    if direction and directions > 1:  # a decoder reads one way
        boxes[3].radio(direction, DIRECTIONS, key=state.DIRECTION, horizontal=True, persist_state="session")
    return chosen(lab)
