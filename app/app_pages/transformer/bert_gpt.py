"""BERT and GPT: one transformer trained twice on Austen's words, with the masked objective (both sides
read) and the next-word one (the left side only), side by side; then both read a sentence with a mask,
show their attention masks, and give one word a vector per sentence and layer ("Recurrent
Architectures", section GPT and BERT; Devlin et al. 2019; Radford et al. 2018)."""
from __future__ import annotations

import dataclasses

import streamlit as st

from app.charts import bert_gpt as charts
from app.charts.style import BLUE, ORANGE
from app.session import pretrained
from app.session.bert_gpt import (
    CAUSAL,
    HEADS,
    LAYERS,
    LESSON_PLAN,
    MASKED,
    SHIPPED,
    SIZES,
    TRAIN,
    ObjectiveRuns,
    Plan,
    Readers,
    readers_of,
    setup_of,
    shipped_readers,
    words_predicted,
)
from app.session.lessons import BY_KEY
from app.widgets import downloads as exports
from app.widgets import lesson_band, mask_guess, part_runs, state, word_contexts
from app.widgets.controls import live_training, round_robin_controls, round_robin_progress, stopped_runs
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from engine.tasks.masked_lm import chosen_count

STEPS = state.BERT_STEPS
TRAIN_SECONDS = 1.0  # training per redraw, as on the other side-by-side pages
LESSON = BY_KEY["contextual-embeddings"]
COLOURS = {MASKED: BLUE, CAUSAL: ORANGE}
READ = {"yours": "your two runs, as they stand",
        "shipped": "the shipped models (trained on the same number of words predicted)"}


def run() -> None:
    lab = page_header("BERT and GPT", own_runs="two transformers of its own")
    st.markdown(
        "**BERT** hides 15% of the words of a text and learns to guess them from **both sides** (Devlin et al. "
        "2019); **GPT** learns to guess each **next word** from the words before it (Radford et al. 2018). Both are "
        "transformers trained on unlabelled text; they differ in the objective and, with it, in what each word "
        "may attend to. Here one transformer is trained both ways on the words of four novels of Jane Austen, "
        "from the same seed on the same windows, at **word level** (a word is one token, so one word has one "
        "vector to follow). Then both read your sentences.")
    plan, train = plan_form()
    runs = current(plan)  # None while the prose is not on this machine: the shipped models still read below
    if runs is not None:
        if train and not all(run.stopped for run in runs.runs) and not state.get(state.CLASS_PAUSED, False):
            runs.playing = True
        which(runs)
        round_robin_controls(runs, "bert", STEPS, "Train each up to step", "run")
        live_training(runs, draw, STEPS, TRAIN_SECONDS)
    st.divider()
    readers = choose_readers(runs)
    if readers is not None:
        mask_guess.section(readers, COLOURS)
        word_contexts.section(readers, COLOURS)
    if runs is not None:
        open_in_lab(runs, lab)
        downloads(runs)


def plan_form() -> tuple[Plan, bool]:
    """The plan the student asks for, and whether to train it now (a changed plan starts again)."""
    plan = state.get(state.BERT_PLAN) or LESSON_PLAN
    with st.form("bert_form", border=True):
        size, layers, heads, seed = st.columns(4)
        hidden = size.selectbox("d_model", SIZES, index=SIZES.index(plan.hidden_size),
                                help="the width of every word's vector in both models")
        blocks = layers.selectbox("Blocks", LAYERS, index=LAYERS.index(plan.num_layers))
        count = heads.selectbox("Heads", HEADS, index=HEADS.index(plan.num_heads), help="of each block's attention")
        chosen = seed.number_input("Seed", 0, 2**31 - 1, plan.seed, help="the start and the windows of both runs")
        button, said = st.columns([3, 5], vertical_alignment="center")
        said.caption("Applies these settings to both runs and plays them (changed settings start them again). "
                     "Play alone trains the runs as they are.")
        if not button.form_submit_button("Train both", type="primary", icon=":material/play_circle:"):
            return plan, False
    asked = Plan(hidden_size=hidden, num_layers=blocks, num_heads=count, seed=int(chosen))
    st.session_state[state.BERT_PLAN] = asked
    return asked, True


def current(plan: Plan) -> ObjectiveRuns | None:
    """This session's two runs of `plan`, made anew when it changes; None, with the reason on the
    page (and the runs the student had kept), when it cannot be run."""
    runs = state.get(state.BERT)
    if runs is not None and runs.plan == plan:
        return runs
    return part_runs.renewed(runs, lambda: ObjectiveRuns(plan), (state.BERT, state.BERT_PLAN, STEPS), LESSON,
                             lambda old: old.plan if old is not None else LESSON_PLAN, "These runs",
                             "The two runs train on its words and are scored on its last 10%; the shipped models "
                             "below read your sentences without it.")


def which(runs: ObjectiveRuns) -> None:
    task, cfg = runs.task, runs.runs[0].cfg
    st.markdown(
        f"**Data:** {task.trained_on()}; windows of {task.seq_len} words. **Network:** a transformer of "
        f"{cfg.num_layers} block{'s' * (cfg.num_layers > 1)}, {cfg.num_heads} heads, d_model {cfg.hidden_size}, "
        f"{sum(p.numel() for p in runs.runs[0].model.parameters()):,} parameters each; {TRAIN.optimizer} lr "
        f"{TRAIN.lr:g}, batch {TRAIN.batch_size}, clip norm {TRAIN.clip_norm:g}, seed {runs.plan.seed}. The masked "
        "run's attention has no mask (every word reads every word); the causal run's reads itself and the words "
        "before it.")


def draw(runs: ObjectiveRuns) -> None:
    until = state.get(STEPS)
    round_robin_progress(runs, until, "run")
    stopped_runs(runs)
    log = runs.log_frame()
    plan = dataclasses.replace(runs.plan, seed=LESSON_PLAN.seed)
    if state.get(state.LESSON) == LESSON.key and plan == LESSON_PLAN:
        lesson_band.for_runs(runs, log, "held-out accuracy", COLOURS)
    baselines = {name: task.baseline_metric[1] for name, task in runs.tasks.items()}
    show(charts.accuracy_over_training(log, baselines, COLOURS), "bert_accuracy")
    st.caption(
        f"Each run scored every 25 steps on its own {len(runs.runs[0].held_out[1]):,} held-out windows (the prose's "
        "last 10%, never trained on): the masked run at the 15% of words hidden from it, the causal run at every "
        f"next word. {standing(log)} Dashed: always guessing 'the', the most frequent word. {equal_steps(runs)}")
    if not runs.playing and runs.finished(until) and not runs.stopped():
        st.success(f"The runs reached step {until:,}. Raise 'Train each up to step' to go on, or read them below.")


def equal_steps(runs: ObjectiveRuns) -> str:
    """What equal steps compare: a masked step learns from 15% of a window's words, a causal one from each next
    word, so the chart does not say which question is easier."""
    seq_len = runs.task.seq_len
    hidden = chosen_count(seq_len)
    return (f"The two answer different questions and learn from different amounts: a masked step from the {hidden} "
            f"words hidden in each window of {seq_len}, a causal step from each next word (up to {seq_len} a window), "
            f"so at equal steps (the same windows through the same network; a masked step costs less, its output "
            f"computed at the hidden words only) the causal run has learnt from about {seq_len / hidden:.0f} times as "
            f"many guesses. Equal steps do not say which question is easier. The shipped pair, read below, compares "
            f"at equal words predicted: {shipped_training()}.")


def shipped_training() -> str:
    """How long each shipped model trained, and on how many words predicted, from their cards."""
    said = []
    for run, name in SHIPPED.items():
        card = pretrained.named(name)
        training = card.fields["training"]
        said.append(f"the {run.split()[0]} model {training['steps']:,} steps of {training['train']['batch_size']} "
                    f"windows, {words_predicted(run, card):,} words predicted")
    return " and ".join(said)


def standing(log) -> str:
    by_run = log.pivot_table(index="step", columns="run", values="metric").dropna() if len(log) else log
    if not len(by_run):
        return ""
    step, row = by_run.index[-1], by_run.iloc[-1]
    return f"At step {step:,}: " + ", ".join(f"{run} {row[run]:.1%}" for run in COLOURS if run in row) + " right."


def choose_readers(runs: ObjectiveRuns | None) -> Readers | None:
    """The two models the read-outs below use: copies of the runs, or the shipped pair (the shipped pair
    alone when there are no runs: the prose they train on is not on this machine)."""
    st.subheader("Read the two models")
    if runs is None:
        st.caption(f"Read by the shipped models ({shipped_training()}), which need no prose to read your sentences.")
        return shipped_or_none()
    choice = st.radio("Models read", tuple(READ), format_func=READ.get, key=state.BERT_READ, horizontal=True,
                      help="Your runs are copied as they stand each time this part redraws (type a sentence, or "
                           "press Enter); training goes on from where they were.")
    if choice == "shipped":
        if state.get(state.LESSON) == LESSON.key:
            st.caption(f"The lesson's figures are your runs' at step {LESSON.steps:,}; the shipped models ("
                       f"{shipped_training()}) give others.")
        return shipped_or_none()
    readers = readers_of(runs)
    if runs.steps_done == 0:
        st.info("Your runs have not trained yet, so they read at random: press Play above, or read the shipped "
                "models.", icon=":material/info:")
    return readers


def shipped_or_none() -> Readers | None:
    try:
        return shipped_readers()
    except (OSError, ValueError) as err:
        st.error(f"The shipped models could not be read ({literal(err)}).", icon=":material/block:")
        return None


def open_in_lab(runs: ObjectiveRuns, lab) -> None:
    """The masked run's model, copied into the Lab: Self-attention then shows all its heads."""
    part_runs.open_in_lab(runs, runs.runs[0], setup_of(runs.plan, MASKED), lab, "bert.open",
                          "Open the masked run's model in the Lab",
                          "Replaces your model on Build & Train with a copy of this one; Self-attention then shows "
                          "every head on held-out windows.")


def downloads(runs: ObjectiveRuns) -> None:
    with st.expander(exports.EXPANDER):
        st.download_button("Both runs' held-out scores (.csv)", lambda: runs.log_frame().to_csv(index=False),
                           "unrolled-bert-gpt-scores.csv", mime="text/csv")
        st.caption(exports.PNG_NOTE)


run()
