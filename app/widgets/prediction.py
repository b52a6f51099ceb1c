"""Predict, then reveal (issue 32): the open lesson's question, above its banner on every page while
it is open, its choices offered until the lesson's page starts training; then the student's answer,
locked; and once that training reaches the lesson's budget, the choice the lesson's measured runs
support beside the student's.

The answer lives in st.session_state[state.PREDICTION] as {"lesson", "choice", "locked"}, the shape
the class board publishes. The reveal quotes the lesson's claim as measured over its ensemble, and
says so: it reads no value off the student's own run (few pages compute a claim's value live, each
in its own way)."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.session import ensembles
from app.session.lessons import Lesson
from app.session.playback import Playback
from app.widgets import state

# A lesson measured without training (its ensemble has no curves) is measured on what its page computes
# when asked: the spectral radius swept, on Gradients (at once when opened); a text written, on Generate.
UNTRAINED = {"gradients": lambda: state.get(state.SWEEP) is not None and bool(state.get(state.SWEEP).curves),
             "generate": lambda: state.get(state.GEN_RESULT) is not None}


@dataclass(frozen=True)
class Progress:
    started: bool  # the page trains (or has trained) what the lesson measures: the answer is locked
    reached: bool  # ... to the lesson's budget, or as far as it can go (diverged): the reveal


def progress(lesson: Lesson) -> Progress:
    """How far the lesson's page has got with what the lesson measures."""
    ensemble = ensembles.shipped(lesson.key)
    if ensemble is not None and not ensemble.runs() and lesson.page in UNTRAINED:
        seen = UNTRAINED[lesson.page]()  # computed: its figures show the answer
        return Progress(seen, seen)
    trainee: Playback | None = state.get(state.OWN_RUNS[lesson.page]) if lesson.page in state.OWN_RUNS else state.lab()
    if trainee is None:  # the page has not made its runs yet
        return Progress(False, False)
    trained = trainee.steps_taken > 0
    return Progress(trained or trainee.playing, trained and trainee.finished(lesson.steps))


LOCKS_WHEN = {"Play": "training starts", "Generate": "you press Generate"}
LOCKED_WHEN = {"Play": "the lesson's runs started", "Generate": "you pressed Generate"}


def go_word(lesson: Lesson) -> str:
    """The button that starts what the lesson measures on its page."""
    return "Generate" if lesson.page == "generate" else "Play"


def answer_to(lesson: Lesson) -> dict | None:
    answer = state.get(state.PREDICTION)
    return answer if answer is not None and answer["lesson"] == lesson.key else None


def show(lesson: Lesson | None) -> None:
    """The open lesson's question, answer and reveal (nothing without a question). An answer to another
    lesson's question is dropped: the board shows the answer to the open lesson's."""
    if lesson is None or answer_to(lesson) is None:
        st.session_state.pop(state.PREDICTION, None)
    if lesson is None or lesson.question is None:
        return
    now = progress(lesson)
    answer = answer_to(lesson)
    if now.started and answer is not None and not answer["locked"]:
        answer = {**answer, "locked": True}  # a new dict: the board's publisher may be reading the old one
        st.session_state[state.PREDICTION] = answer
    with st.container(border=True):
        st.markdown(f":material/quiz: **Predict first.** {lesson.question.text}")
        if not now.started and not (answer is not None and answer["locked"]):  # locked stays locked (a Reset too)
            choose(lesson, answer)
        elif answer is None:
            st.markdown(f"This question was for before {go_word(lesson)}: the lesson's page has started. What its runs "
                        "measured shows here once they reach the lesson's budget.")
        else:
            st.markdown(f"Your prediction, locked when {LOCKED_WHEN[go_word(lesson)]}: **{answer['choice']}**")
        if now.reached:
            reveal(lesson, answer)
        elif now.started:
            st.caption(f"The measured answer shows here when training reaches step {lesson.steps:,}.")


def choose(lesson: Lesson, answer: dict | None) -> None:
    """The choices as a radio, the student's answer kept (unlocked) as they change it."""
    texts = [choice.text for choice in lesson.question.choices]
    kept = answer["choice"] if answer is not None and answer["choice"] in texts else None
    picked = st.radio(f"Your prediction: it locks when {LOCKS_WHEN[go_word(lesson)]}", texts,
                      index=None if kept is None else texts.index(kept), key=f"prediction.{lesson.key}")
    if picked is not None and picked != kept:
        st.session_state[state.PREDICTION] = {"lesson": lesson.key, "choice": picked, "locked": False}


def reveal(lesson: Lesson, answer: dict | None) -> None:
    """The choice the lesson's measured runs support, their range of the claim, and the student's mark."""
    question = lesson.question
    st.markdown(f"**Measured:** {question.measured}: {lesson.claims[question.claim].quote()} on every one of the "
                f"lesson's runs, so the answer is **{question.right.text}**.")
    if answer is None:
        st.markdown(f"You did not predict before {go_word(lesson)}.")
    elif answer["choice"] == question.right.text:
        st.markdown(f":green[:material/check_circle: Your prediction, **{answer['choice']}**, is the measured one.]")
    else:
        st.markdown(f":red[:material/cancel: Your prediction, **{answer['choice']}**, is not: the measurement "
                    "overturned it.]")
    ensemble = ensembles.shipped(lesson.key)
    runs = f"The lesson's runs: {ensemble.describe()}. " if ensemble is not None else ""
    st.caption(f"{runs}What they measured, not a value read off your own run: your run's figures are on the page, "
               "to set beside them.")
