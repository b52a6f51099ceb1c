"""Build & Train beside an uploaded review CSV: how much of each review the network reads, and a
button that makes it read most of them whole (a median IMDB review runs about 170 words; the
shipped reviews' presets read 40)."""
from __future__ import annotations

import dataclasses

import streamlit as st

from app.session.lab import Lab
from app.widgets import state, uploads
from app.widgets.header import this_tab_only
from app.widgets.literal import literal
from engine.tasks import ParsedReviews


def read_longer(lab: Lab, reviews: ParsedReviews) -> None:
    """The reviews' lengths against the words the network reads; the button when most are cut."""
    seq_len = lab.setup.task_params["seq_len"]
    st.caption(uploads.lengths_text(reviews, seq_len))
    longer = uploads.longer_read(reviews, seq_len)
    refused = st.session_state.pop(state.READ_LONGER_REFUSED, None)
    if refused:
        st.error(f"{literal(refused)}. The model you had is unchanged.", icon=":material/block:")
    if longer is not None:
        st.button(f"Read the last {longer:,} words", key="read_longer", icon=":material/unfold_more:",
                  on_click=this_tab_only(set_seq_len), args=(lab, longer),
                  help="a new model whose sequence length reads 90% of your reviews whole; each step takes longer")


def set_seq_len(lab: Lab, seq_len: int) -> None:
    """The button's callback: a new model reading `seq_len` words, on the same upload; refused over
    the size budget (the message says so on the page)."""
    setup = lab.setup
    try:
        lab.change(dataclasses.replace(setup, task_params={**setup.task_params, "seq_len": seq_len}), lab.upload)
    except ValueError as err:
        st.session_state[state.READ_LONGER_REFUSED] = str(err)
