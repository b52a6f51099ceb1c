"""Home: what Unrolled is, a suggested path for a first class, and every lesson by objective, each
opening its setup on the right page with one click."""
import streamlit as st

from app import pages
from app.session import ensembles
from app.session.lessons import Lesson, by_objective, first_class, nlp_class
from app.widgets.header import page_header
from app.widgets.open_lesson import open_lesson
from app.widgets.pretrained import shipped_cards

PAGE_TITLES = {url: title for entries in pages.SECTIONS.values() for _, title, url, _ in entries}


def minutes(lesson: Lesson) -> float | None:
    ensemble = ensembles.shipped(lesson.key)
    return None if ensemble is None else ensemble.minutes()


def duration(lesson: Lesson) -> str:
    """"about 3 min of training": what every run its card asks for trained here, measured."""
    taken = minutes(lesson)
    if taken is None:
        return "not measured"
    if lesson.shipped is not None:
        return "a shipped model, nothing to train"
    return "under a minute of training" if taken < 1 else f"about {taken:.0f} min of training"


def suggested_path(title: str, path: list[Lesson], order: str) -> None:
    """A class's lessons in order, each a line with its page, its training time and a button that opens it."""
    trained = sum(minutes(lesson) or 0 for lesson in path)
    st.subheader(title)
    st.caption(f"{len(path)} lessons in the order {order}, at most about {trained:.0f} minutes of training in all "
               "(measured on this kind of CPU, one thread, every run each card asks for, with other work on the "
               "same cores: an upper bound; a playing page also draws), leaving the rest of the hour and a half to "
               "predict, look and discuss. Each asks its question before it runs.")
    for number, lesson in enumerate(path, 1):
        text, button = st.columns([5, 1], vertical_alignment="center")
        text.markdown(f"**{number}. {lesson.title}** · {PAGE_TITLES[lesson.page]} · {duration(lesson)}")
        if button.button("Open", key=f"path.{lesson.key}", width="stretch"):
            open_lesson(lesson)


def lesson_card(lesson: Lesson) -> None:
    with st.container(border=True):
        st.markdown(f"**{lesson.title}**")
        st.caption(f"{PAGE_TITLES[lesson.page]} · {duration(lesson)}")
        if lesson.question is None:
            st.markdown(lesson.what_to_do)  # the claim, readable without opening anything
        else:  # its claim answers the question the lesson asks before Play: the question first, the claim kept
            st.markdown(f":material/quiz: {lesson.question.text}")
            with st.expander("The measured answer"):
                st.markdown(lesson.what_to_do)
        st.caption(f"*Reproduces:* {lesson.published}.")
        if st.button("Open this lesson", key=f"lesson.{lesson.key}", width="stretch"):
            open_lesson(lesson)


def run() -> None:
    lab = page_header("Unrolled", lesson=False)
    st.markdown(
        "Build, train and open up sequence models live, on this computer's CPU: hidden states "
        "unrolled through time, LSTM and GRU gates, the gradient that backpropagation through "
        "time sends to every step, where an encoder-decoder's attention looks, and the heads and "
        "positions of a transformer. Pick a lesson to load its task, model and settings, or go to "
        "**Build & Train** and set them yourself. Every figure a lesson quotes is a range measured over "
        "three seeds and two CPU kernel paths, and its page draws that range behind your own run."
    )
    suggested_path("Start here: a first 90-minute class", first_class(), "the GWU lecture teaches them")
    suggested_path("The NLP half: a 90-minute class", nlp_class(),
                   "Scott's \"Recurrent Architectures\" teaches embeddings, translation, GPT and BERT, with the "
                   "GWU lecture's transfer learning after the embeddings and \"Lecture 4: RNNs\"' decoding last")
    st.subheader("Every lesson, by objective")
    for objective, lessons in by_objective():
        st.markdown(f"#### {objective}")
        for row in range(0, len(lessons), 2):  # two a row: a card's claim stays readable at 1024 px
            for column, lesson in zip(st.columns(2), lessons[row: row + 2]):
                with column:
                    lesson_card(lesson)
    st.subheader("Trained models, ready to open")
    st.caption("Each was trained on this kind of CPU by `python -m pretrained.build` (pretrained/README.md says "
               "how long, and on what data); opening one gives you your own copy to train on.")
    shipped_cards(lab)


run()
