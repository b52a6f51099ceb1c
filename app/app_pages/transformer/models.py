"""What the Transformers pages share: whether the model is a transformer, and widgets whose range
depends on it kept in range."""
from __future__ import annotations

import streamlit as st

from app.session.lab import Lab


def is_transformer(lab: Lab) -> bool:
    return lab.setup.model.arch == "transformer"


def shadowed(key: str, widget: str, value: int) -> None:
    """Keep a number in `key` and show it in the widget keyed `widget` (drawn with
    on_change=copied, args=(key, widget)). A widget whose range depends on the model (a query
    slider up to T - 1) is a new widget when the range changes, and in the browser it came back
    at its minimum (measured: the query went from 4 to 0 on opening the decoder); the value kept
    apart, clamped by the caller, is written into the new widget before it is drawn."""
    st.session_state[key] = st.session_state[widget] = value


def copied(key: str, widget: str) -> None:
    st.session_state[key] = st.session_state[widget]
