"""Home: what Unrolled is, and one-click lessons that set everything up and open the right page."""
import streamlit as st

from app import pages
from app.session.lessons import Lesson, by_objective
from app.widgets import state
from app.widgets.header import current_lab, page_header
from app.widgets.literal import literal
from app.widgets.pretrained import shipped_cards


def open_lesson(lesson: Lesson) -> None:
    try:
        current_lab().start(lesson.setup)
    except ValueError as err:  # a lesson the lab refuses (over the size budget): say so, keep the model
        st.error(f"This lesson could not be opened ({literal(err)}). The model you had is unchanged.",
                 icon=":material/block:")
        return
    st.session_state[state.LESSON] = lesson.key
    st.session_state[state.TARGET_STEPS] = lesson.steps
    for key in state.RESET_BY_A_LESSON:
        st.session_state.pop(key, None)
    st.switch_page(pages.PATHS[lesson.page])


def run() -> None:
    lab = page_header("Unrolled", lesson=False)
    st.markdown(
        "Build, train and open up sequence models live, on this computer's CPU: hidden states "
        "unrolled through time, LSTM and GRU gates, the gradient that backpropagation through "
        "time sends to every step, where an encoder-decoder's attention looks, and the heads and "
        "positions of a transformer. Pick a lesson to load its task, model and settings, or go to "
        "**Build & Train** and set them yourself; **Unroll**, **Gates**, **Gradients** and "
        "**Compare cells** open a recurrent network up while it trains, **BPTT and RTRL** computes its gradient "
        "both ways, **Encoder-decoder** shows its attention, **Positional encoding**, **Self-attention** and "
        "**Why √d_k** a transformer; **Generate text** lets a character language model write, and **Transfer "
        "learning** reuses one for another task."
    )
    st.subheader("Lessons, in the order of the course's objectives")
    ordered = [(objective, lesson) for objective, lessons in by_objective() for lesson in lessons]
    for row in range(0, len(ordered), 3):
        for column, (objective, lesson) in zip(st.columns(3), ordered[row : row + 3]):
            with column.container(border=True):
                st.caption(f"Objective: {objective}")
                st.markdown(f"**{lesson.title}**")
                st.caption(f"*Reproduces:* {lesson.published}.")
                with st.expander("What you do and see"):  # the lesson's page shows it all again in its banner
                    st.caption(lesson.what_to_do)
                if st.button("Open this lesson", key=f"lesson.{lesson.key}", width="stretch"):
                    open_lesson(lesson)
    st.subheader("Trained models, ready to open")
    st.caption("Each was trained on this kind of CPU by `python -m pretrained.build` (pretrained/README.md says "
               "how long, and on what data); opening one gives you your own copy to train on.")
    shipped_cards(lab)


run()
