"""What a page about recurrent cells says when the model has none (a transformer): the page's
header and link as usual, what the page shows, and where the transformer's own pages are."""
from __future__ import annotations

import streamlit as st

from app.widgets.header import page_header


def no_cells_here(title: str) -> None:
    """The whole page, for a transformer: nothing of the student's model changes."""
    lab = page_header(title)
    st.info(
        f"**{title}** opens up a recurrent network's cells: its hidden states h_t, gates and the gradient "
        f"that backpropagation through time sends back step by step. The model on Build & Train is a "
        f"transformer ({lab.setup.model.num_layers} block(s) of {lab.setup.model.num_heads} attention head(s)): "
        "every position looks at every other through attention, with no state carried from step to step. "
        "Pick an RNN, LSTM or GRU on Build & Train to open it up here.",
        icon=":material/info:",
    )
