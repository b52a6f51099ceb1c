"""A button that opens a ready-made setup (a small transformer, the char LM preset) in place of the
student's model, on the pages that need one."""
from __future__ import annotations

import streamlit as st

from app.session.lab import Lab
from app.session.link import Setup
from app.widgets import corpus_needed, state
from app.widgets.literal import literal
from engine import datasets


def open_button(lab: Lab, label: str, setup: Setup, steps: int, key: str, where=st, help: str | None = None,
                width: str = "stretch") -> None:
    """A button that makes `setup` the lab's model (fresh weights, "Train up to step" set to
    `steps`); over the size budget it says so and keeps the model the student had. `width`: "content"
    in a row of buttons that wraps (a label is never cut)."""
    if not where.button(label, key=key, width=width, help=help, icon=":material/add_circle:"):
        return
    try:
        lab.start(setup)
    except datasets.CorpusMissing as missing:  # said at the top of the page, until it is here
        corpus_needed.ask(missing, "The model you asked to open trains on it; your model is unchanged.")
        st.rerun()
    except ValueError as err:
        st.error(f"{literal(err)}. The model you had is unchanged.", icon=":material/block:")
        return
    st.session_state.pop(state.LESSON, None)  # the lesson's text speaks of the model it opened
    st.session_state[state.TARGET_STEPS] = steps
    st.rerun()
