"""Pretrained embeddings: word2vec vectors learnt from unlabelled text as the start of a sentiment
LSTM's embedding, random, frozen and fine-tuned side by side on real review sentences, from the same
seed on the same batches ("Recurrent Architectures", section NLP: "train embedding as part of RNN
or use pre-trained one")."""
from __future__ import annotations

import dataclasses

import streamlit as st

from app.charts import transfer as charts
from app.charts.style import BLUE, GREEN, GREY
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.word_vectors import (
    LABELLED,
    LESSON_PLAN,
    TRAIN,
    Plan,
    VectorRuns,
    setup_of,
    shipped_vectors,
)
from app.widgets import lesson_band, part_runs, state
from app.widgets.controls import live_training, round_robin_controls, round_robin_progress, stopped_runs
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from app.widgets.uploads import parsed_reviews
from engine.tasks.sentiment import READ_LENGTHS
from engine.word_vectors import WordVectors

STEPS = state.VECTORS_STEPS
TRAIN_SECONDS = 1.0  # training per redraw, as on the other side-by-side pages
LESSON = BY_KEY["pretrained-embeddings"]
COLOURS = {"random": GREY, "frozen": BLUE, "fine-tuned": GREEN}
SOURCES = {"shipped": "word2vec shipped with Unrolled (prose + the training sentences' text)",
           "yours": "your word2vec from the Embeddings page (prose only), as it stands now"}
MISSING_SHOWN = 12
WORDS = (0, *READ_LENGTHS)  # words read of each review a student may pick; 0: enough for 9 in 10 whole


def run() -> None:
    lab = page_header("Pretrained embeddings", own_runs="three runs of its own")
    st.markdown(
        "An RNN that reads words starts from an embedding: a vector per word. It can learn that embedding "
        "with its task, from a random start, or **start from vectors learnt elsewhere** on unlabelled text, "
        "such as word2vec's, and then keep them **frozen** or **fine-tune** them with the rest (\"Recurrent "
        "Architectures\", section NLP). Labelled data is dear and unlabelled text is cheap: with few labels, "
        "a word the labelled sentences never taught can still sit near words they did. Here one LSTM reads "
        "real review sentences (IMDB, Amazon and Yelp: the UCI Sentiment Labelled Sentences of Kotzias et al., "
        "\"From Group to Individual Labels using Deep Features\", KDD 2015; CC BY 4.0) word by word and says positive "
        "or negative, trained three times from the same seed on the same batches, its embedding starting "
        "**random**, **frozen** at the word2vec vectors, or **fine-tuned** from them.")
    plan, train = plan_form()
    runs = current(plan)
    if runs is None:
        return
    if train and not all(run.stopped for run in runs.runs) and not state.get(state.CLASS_PAUSED, False):
        runs.playing = True
    which(runs)
    round_robin_controls(runs, "vectors", STEPS, "Train each up to step", "run")
    live_training(runs, draw, STEPS, TRAIN_SECONDS)
    open_in_lab(runs, lab)
    downloads(runs)


def yours() -> WordVectors | None:
    """The session's word2vec from the Embeddings page, copied as it stands (None before it trained)."""
    embedding = state.get(state.EMBEDDINGS)
    if embedding is None or embedding.steps_taken == 0:
        return None
    with embedding.hold():  # between two steps of a run playing on the Embeddings page
        trained = embedding.run
        vectors, steps = trained.vectors(), trained.steps_done  # [V, d] a copy
    cfg = trained.cfg  # with the step, what makes the vectors: two asks that differ in it are two plans
    name = f"your word2vec at step {steps:,} ({cfg.dim} dims, window {cfg.window}, {cfg.negatives} noise words)"
    about = {"name": name, "steps": steps,
             "corpus": "four novels of Jane Austen (Project Gutenberg, public domain)", "config": trained.cfg.to_dict()}
    return WordVectors(trained.words, vectors, about)


def plan_form() -> tuple[Plan, bool]:
    """The plan the student asks for, and whether to train it now (the form's button plays the runs;
    a changed plan starts them again)."""
    plan = state.get(state.VECTORS_PLAN) or LESSON_PLAN
    with st.form("vectors_form", border=True):
        left, right = st.columns([2, 3])
        labelled = left.selectbox("Labelled sentences", LABELLED, index=LABELLED.index(plan.labelled),
                                  format_func=lambda n: f"{n:,}" if n else "all of them",
                                  help="to train on, of the training sentences (shuffled by the seed); the "
                                       "held-out ones are scored either way")
        words = left.selectbox("Words read of each", WORDS, index=WORDS.index(plan.words),
                               format_func=lambda n: f"the last {n:,}" if n else "enough for 9 in 10 whole",
                               help="each run reads a review word by word up to its end: the last this many words "
                                    "of each (a longer one is cut; the page says how many were)")
        source = right.radio("Word vectors", tuple(SOURCES), format_func=SOURCES.get,
                             index=tuple(SOURCES).index(plan.vectors if plan.vectors in SOURCES else "yours"))
        csv = st.file_uploader("Your own reviews (optional): a review,sentiment CSV, as Kaggle's IMDB 50K", type="csv",
                               key=state.VECTORS_CSV, help="Read word by word (the words read of each as set "
                               "above), a fifth held out by the seed. Leave empty for the shipped sentences.")
        button, said = st.columns([3, 5], vertical_alignment="center")
        said.caption("Applies the settings in this box and plays the three runs (changed settings start them "
                     "again). Play alone trains the runs as they are.")
        if not button.form_submit_button("Train the three runs", type="primary", icon=":material/play_circle:"):
            return plan, False
    try:
        reviews = parsed_reviews(csv.getvalue()) if csv is not None else None  # parsed once per server
    except ValueError as err:
        st.error(f"Your reviews could not be read: {literal(err)}. The runs you had are unchanged.",
                 icon=":material/block:")
        return plan, False
    if source == "yours":
        found = yours()
        if found is None:
            st.warning("You have not trained word2vec on the Embeddings page yet: train it there (a few thousand "
                       "steps), then come back. The runs you had are unchanged.", icon=":material/info:")
            return plan, False
        st.session_state[state.VECTORS_YOURS] = found
    asked = Plan(labelled=labelled, words=words, vectors=source if source == "shipped" else found.about["name"],
                 seed=plan.seed, hidden_size=plan.hidden_size, csv_digest=reviews.digest if reviews is not None else "")
    st.session_state[state.VECTORS_REVIEWS] = reviews
    st.session_state[state.VECTORS_PLAN] = asked
    return asked, True


def vectors_of(plan: Plan) -> WordVectors:
    return shipped_vectors() if plan.vectors == "shipped" else state.get(state.VECTORS_YOURS)


def current(plan: Plan) -> VectorRuns | None:
    """This session's three runs of `plan`, made anew when the plan changes; None, with the reason on
    the page (and the runs the student had kept), when it cannot be run."""
    runs = state.get(state.VECTORS)
    if runs is not None and runs.plan == plan:
        return runs
    reviews = state.get(state.VECTORS_REVIEWS) if plan.csv_digest else None  # a plan refused kept the old
    return part_runs.renewed(runs, lambda: VectorRuns(plan, vectors_of(plan), reviews),
                             (state.VECTORS, state.VECTORS_PLAN, STEPS), LESSON,
                             lambda old: old.plan if old is not None else LESSON_PLAN, "These runs",
                             "The three runs train on its labelled sentences and are scored on its held-out ones. "
                             "Or give them your own reviews instead: a review,sentiment CSV in the box above.")


def which(runs: VectorRuns) -> None:
    covered, about = runs.covered, runs.vectors.about
    missing = ", ".join(covered.missing[:MISSING_SHOWN])
    data = "sentences" if runs.reviews is None else f"reviews of your CSV ({len(runs.held_out[1]):,} more held out)"
    st.markdown(
        f"**Vectors:** {about['name']}, {runs.vectors.vectors.shape[1]} numbers a word, "
        f"{len(runs.vectors.words):,} words, from {about['corpus']} ({about['steps']:,} steps). "
        f"**{covered.found:,} of the {covered.words:,} words** the LSTM reads have one; the rest start at random "
        f"in every run (the most frequent without: {missing}). **Network:** an LSTM of {runs.network.hidden_size} "
        f"units over an embedding of {runs.network.embedding_dim}; {TRAIN.optimizer} lr {TRAIN.lr:g}, batch "
        f"{TRAIN.batch_size}, clip norm {TRAIN.clip_norm:g}, seed {runs.plan.seed}, "
        f"{len(runs.task.train_y):,} labelled {data}, the last {runs.task.seq_len} words of each: {cut_text(runs)}.")


def cut_text(runs: VectorRuns) -> str:
    longer, total = runs.cut_counts
    what = "sentences" if runs.reviews is None else "reviews"
    if not longer:
        return f"every one of the {total:,} {what} is read whole"
    return f"{longer:,} of the {total:,} {what} are longer, and are read from their last {runs.task.seq_len} words"


def draw(runs: VectorRuns) -> None:
    until = state.get(STEPS)
    round_robin_progress(runs, until, "run")
    stopped_runs(runs)
    log, parts = runs.log_frame(), runs.parts_frame()
    plan = dataclasses.replace(runs.plan, seed=LESSON_PLAN.seed)
    if state.get(state.LESSON) == LESSON.key and plan == LESSON_PLAN:
        lesson_band.for_runs(runs, log, runs.task.metric_name, COLOURS)
    left, right = st.columns(2)
    show(charts.accuracy_over_training(log, None, "", COLOURS, runs.baseline), "vectors_accuracy", left)
    what = "sentences" if runs.reviews is None else "reviews"
    left.caption(f"The three runs scored on the same {len(runs.held_out[1]):,} held-out {what} every 25 steps and "
                 f"after each Step. Dotted: a bag of words (logistic regression on how often each word occurs) "
                 f"fitted on the same {len(runs.task.train_y):,} labelled {what}, each cut to the same last "
                 f"{runs.task.seq_len} words, scores {runs.baseline[1]:.1%}: the line to beat, by a model that reads "
                 f"the words in order.{runs.standing(log)}")
    show(charts.part_gradients(parts, "frozen", None, ""), "vectors_gradients", right)
    right.caption("‖∂L/∂θ‖ of each part of the frozen run at each measured step. The frozen embedding gets no "
                  "gradient at all: exactly 0, drawn at the floor and marked ▼; its vectors stay as copied "
                  "(the table: moved 0), while the fine-tuned run's move.")
    st.table(charts_table(parts), hide_index=True)
    if not runs.playing and runs.finished(until) and not runs.stopped():
        st.success(f"The runs reached step {until:,}. Raise 'Train each up to step' to go on.")


def charts_table(parts):
    """Each run's embedding at its latest measurement: trains or frozen, its gradient, how far it moved."""
    if not len(parts):
        return parts
    rows = parts[(parts["part"] == "embedding") & (parts["step"] == parts.groupby("run")["step"].transform("max"))]
    frame = rows[["run", "state", "step", "grad_norm", "moved"]].rename(columns={
        "grad_norm": "embedding ‖∂L/∂θ‖ at that step", "moved": "embedding ‖θ − θ_start‖", "state": "now"})
    return frame.style.format({"embedding ‖∂L/∂θ‖ at that step": "{:.3g}", "embedding ‖θ − θ_start‖": "{:.3g}",
                               "step": "{:,}"})


def open_in_lab(runs: VectorRuns, lab: Lab) -> None:
    """The fine-tuned run's model, copied into the Lab, to look inside it on the other pages."""
    part_runs.open_in_lab(runs, runs.runs[2], setup_of(runs.plan, runs.network, runs.reviews), lab, "vectors.open",
                          "Open the fine-tuned run's model in the Lab",
                          "Replaces your model on Build & Train with a copy of this one; Unroll and Gates then open "
                          "it up on a sentence, and the Embeddings page reads its embedding.")


def downloads(runs: VectorRuns) -> None:
    part_runs.downloads(runs, "The three runs'", "word-vectors")

run()
