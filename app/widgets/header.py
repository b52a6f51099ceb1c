"""The top of every page: this session's Lab (made from the link on first use), the title, what
was wrong with the link, the open lesson's banner, the link kept in the address bar, and the
sidebar summary of the model every page works on."""
from __future__ import annotations

import streamlit as st

from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.link import DEFAULT, Setup, parse_query
from app.widgets import state


def current_lab() -> Lab:
    """This session's Lab, made on first use from the link (or the defaults, with a message
    saying what in the link was wrong). A link goes through the Lab's one install step, so the
    size budget holds for it as for the form."""
    if state.lab() is None:
        query = st.query_params.to_dict()
        try:
            st.session_state[state.LAB] = Lab(parse_query(query) if query else DEFAULT)
        except ValueError as err:  # a bad value, settings that cannot train together, over the budget
            st.session_state[state.LINK_PROBLEM] = (
                f"This link's settings could not be used ({err}). Unrolled started with the "
                "defaults instead: the adding problem with an LSTM."
            )
            st.session_state[state.LAB] = Lab(DEFAULT)
    return state.lab()


def page_header(title: str, summary: bool = True, lesson: bool = True) -> Lab:
    """Title, link problem, the lesson banner (unless lesson=False: Home lists every lesson) and
    the link; the sidebar summary unless the page draws it from a live fragment (summary=False),
    where the step count keeps up while playing."""
    lab = current_lab()
    st.title(title)
    show_link_problem()
    if lesson:
        lesson_banner()
    write_link(lab.setup)
    if summary:
        sidebar_summary(lab)
    return lab


def lesson_banner() -> None:
    """The open lesson's title and what to do, on the page it opened."""
    lesson = BY_KEY.get(state.get(state.LESSON))
    if lesson:
        st.info(f"**{lesson.title}.** {lesson.what_to_do}", icon=":material/school:")


def show_link_problem() -> None:
    problem = st.session_state.pop(state.LINK_PROBLEM, None)
    if problem:
        st.warning(problem, icon=":material/link_off:")


def write_link(setup: Setup) -> None:
    """Mirror the settings in the address bar, so the link reproduces them."""
    query = setup.to_query()
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def sidebar_summary(lab: Lab) -> None:
    """The model every page works on."""
    with st.sidebar:
        st.markdown("**Your model**")
        summary = lab.summary()
        st.markdown("  \n".join(f"{k}: **{v}**" for k, v in summary.items()))
        if lab.trainer.diverged_at is not None:
            st.markdown(f":red[{lab.trainer.status}]")
