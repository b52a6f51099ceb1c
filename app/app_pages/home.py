"""Home: what Unrolled is, and one-click lessons that set everything up and open the right page."""
import streamlit as st

import nav
import ui
from lessons import LESSONS, Lesson

COMING = [
    ("Unroll", "step through time: inputs, hidden states and outputs at every t"),
    ("Compare cells", "tanh RNN, ReLU RNN, LSTM and GRU trained side by side, their gradients overlaid"),
    ("Attention & transformers", "where an encoder-decoder or a transformer head looks"),
]


def open_lesson(lesson: Lesson) -> None:
    ui.lab().start(lesson.setup)
    st.session_state["lesson"] = lesson.key
    st.session_state["target_steps"] = lesson.steps
    st.switch_page(nav.PATHS[lesson.page])


def run() -> None:
    ui.sidebar_summary(ui.lab())
    st.title("Unrolled")
    ui.show_link_problem()
    st.markdown(
        "Build, train and open up recurrent networks live, on this computer's CPU: hidden states "
        "unrolled through time, LSTM and GRU gates, and the gradient that backpropagation through "
        "time sends to every step. Pick a lesson to load its task, model and settings, or go to "
        "**Build & Train** and set them yourself."
    )
    st.subheader("Lessons")
    for row in range(0, len(LESSONS), 3):
        for column, lesson in zip(st.columns(3), LESSONS[row : row + 3]):
            with column.container(border=True):
                st.markdown(f"**{lesson.title}**")
                st.caption(lesson.what_to_do)
                if st.button("Open this lesson", key=f"lesson.{lesson.key}", width="stretch"):
                    open_lesson(lesson)
    st.subheader("Pages on the way")
    st.markdown("\n".join(f"- **{name}**: {what}" for name, what in COMING))


run()
