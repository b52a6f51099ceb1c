"""What the Transformers pages share: the button that opens one of the small transformers of
app/session/transformers.py when the student's model is none, and widgets kept in range."""
from __future__ import annotations

import streamlit as st

from app.session.lab import Lab
from app.session.link import Setup
from app.widgets import state


def is_transformer(lab: Lab) -> bool:
    return lab.setup.model.arch == "transformer"


def open_button(lab: Lab, label: str, setup: Setup, steps: int, key: str, where=st, help: str | None = None) -> None:
    """A button that makes `setup` the lab's model (fresh weights, "Train up to step" set to
    `steps`); over the size budget it says so and keeps the model the student had."""
    if not where.button(label, key=key, width="stretch", help=help, icon=":material/add_circle:"):
        return
    try:
        lab.start(setup)
    except ValueError as err:
        st.error(f"{err}. The model you had is unchanged.", icon=":material/block:")
        return
    st.session_state.pop(state.LESSON, None)  # the lesson's text speaks of the model it opened
    st.session_state[state.TARGET_STEPS] = steps
    st.rerun()


def shadowed(key: str, widget: str, value: int) -> None:
    """Keep a number in `key` and show it in the widget keyed `widget` (drawn with
    on_change=copied, args=(key, widget)). A widget whose range depends on the model (a query
    slider up to T - 1) is a new widget when the range changes, and in the browser it came back
    at its minimum (measured: the query went from 4 to 0 on opening the decoder); the value kept
    apart, clamped by the caller, is written into the new widget before it is drawn."""
    st.session_state[key] = st.session_state[widget] = value


def copied(key: str, widget: str) -> None:
    st.session_state[key] = st.session_state[widget]
