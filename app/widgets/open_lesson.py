"""Opening a lesson: its setup in the Lab, its budget as the target, the pages' own settings set
back, and its page. From Home's cards, and from a teacher's "follow me" (widgets/class_link.py)."""
from __future__ import annotations

import streamlit as st

from app import pages
from app.session import pretrained
from app.session.lesson_runs import seeded
from app.session.lessons import Lesson
from app.widgets import corpus_needed, state
from app.widgets.header import current_lab
from app.widgets.literal import literal
from engine import datasets


def open_lesson(lesson: Lesson, seed: int | None = None) -> None:
    """`seed`: the lesson's setup on another seed (a student of a class: the class an ensemble), else its own."""
    try:
        if lesson.shipped is None:
            setup = lesson.setup if seed is None else seeded(lesson.setup, seed)
            current_lab().start(setup)
        else:  # a fresh copy of the trained model the lesson reads (its link is that model's setup)
            pretrained.install_into(current_lab(), lesson.shipped)
    except datasets.CorpusMissing as missing:
        # Its page opens, saying what to download (its runs read the corpus too); the Lab keeps the model it had
        corpus_needed.ask(missing, f"The lesson “{lesson.title}” trains on it; the model you had on Build & Train is "
                                   "unchanged.")
    except (ValueError, OSError) as err:  # over the size budget, or a shipped model unreadable: keep the model
        st.error(f"This lesson could not be opened ({literal(err)}). The model you had is unchanged.",
                 icon=":material/block:")
        return
    st.session_state[state.LESSON] = lesson.key
    st.session_state[state.TARGET_STEPS] = lesson.steps
    for key in state.RESET_BY_A_LESSON:
        st.session_state.pop(key, None)
    st.switch_page(pages.PATHS[lesson.page])
