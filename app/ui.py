"""Session helpers shared by every page: the student's Lab, the link in the address bar, the
sidebar summary."""
from __future__ import annotations

import streamlit as st

from lab import Lab
from settings import DEFAULT, Setup, parse_query

LAB = "lab"


def lab() -> Lab:
    """This session's Lab, made on first use from the link (or the defaults, with a message
    saying what in the link was wrong)."""
    if LAB not in st.session_state:
        query = st.query_params.to_dict()
        try:
            st.session_state[LAB] = Lab(parse_query(query) if query else DEFAULT)
        except ValueError as err:  # a bad value, or settings that cannot train together
            st.session_state["link_problem"] = (
                f"This link's settings could not be used ({err}). Unrolled started with the "
                "defaults instead: the adding problem with an LSTM."
            )
            st.session_state[LAB] = Lab(DEFAULT)
    return st.session_state[LAB]


def show_link_problem() -> None:
    problem = st.session_state.pop("link_problem", None)
    if problem:
        st.warning(problem, icon=":material/link_off:")


def write_link(setup: Setup) -> None:
    """Mirror the settings in the address bar, so the link reproduces them."""
    query = setup.to_query()
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def sidebar_summary(current: Lab) -> None:
    """The model every page works on. Each page draws it once (a training page from inside its
    live fragment, so the step count keeps up while playing)."""
    with st.sidebar:
        st.markdown("**Your model**")
        summary = current.summary()
        st.markdown("  \n".join(f"{k}: **{v}**" for k, v in summary.items()))
        if current.trainer.diverged_at is not None:
            st.markdown(f":red[{current.trainer.status}]")
