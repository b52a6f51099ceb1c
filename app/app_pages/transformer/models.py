"""The small transformers the Transformers pages open when the student's model is none: each a
task preset with its model swapped for a transformer, small enough for the size budget and to
train visibly here within a minute (measured: see the captions of the pages that offer them)."""
from __future__ import annotations

import dataclasses

import streamlit as st

from app.session.lab import Lab
from app.session.link import Setup, preset_setup
from app.widgets import state

# A transformer's settings over a recurrent preset's: what it has no use for back to the defaults.
NOT_A_TRANSFORMERS = dict(embedding_dim=16, init="default", spectral_radius=None, forget_bias=None, peephole=False,
                          attention=None, reverse_source=False, activation="tanh", dropout=0.0)


def transformer_setup(task: str, task_params: dict | None = None, steps: int | None = None, **model) -> Setup:
    """The task's preset (its training settings and parameters, with `task_params` over them)
    with a transformer of these settings for its model."""
    base = preset_setup(task)
    cfg = dataclasses.replace(base.model, arch="transformer", **NOT_A_TRANSFORMERS, **model)
    return dataclasses.replace(base, model=cfg, task_params={**base.task_params, **(task_params or {})})


LEARNED_REVERSAL = transformer_setup("reverse", hidden_size=32, num_heads=2, num_layers=2, bidirectional=False,
                                     position_encoding="learned")
CHAR_LM = transformer_setup("charlm", {"seq_len": 48}, hidden_size=48, num_heads=4, num_layers=2,
                            bidirectional=False)
SENTIMENT_ENCODER = transformer_setup("sentiment", hidden_size=32, num_heads=2, num_layers=2, bidirectional=True)
REVERSAL = transformer_setup("reverse", hidden_size=32, num_heads=2, num_layers=2, bidirectional=False)


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
