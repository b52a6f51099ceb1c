"""Which part of a recording a figure shows, and how that part is named on screen.

A recording has stacks (the only one, or "encoder" and "decoder"), each with layers and
directions; figures name them the same way everywhere: "layer 1 ←", "the decoder's". No
streamlit here.
"""
from __future__ import annotations

from engine import Recording, StackTrace

ARROWS = ("→", "←")  # direction 0 (forward), 1 (backward)


def trace_of(rec: Recording, stack: str | None) -> StackTrace:
    """The stack asked for ("encoder", "decoder"), or the recording's first."""
    if stack is None:
        return rec.main
    if stack not in rec.stacks:
        raise ValueError(f"no stack {stack!r}; this recording has {', '.join(rec.stacks)}")
    return rec.stacks[stack]


def whose(stack: str | None) -> str:
    return f"the {stack}'s " if stack else ""


def label(layer: int, direction: int) -> str:
    return f"layer {layer} {ARROWS[direction]}"

