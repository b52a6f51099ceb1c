"""Compare architectures: a tanh RNN, an LSTM, a GRU, a bidirectional LSTM and a transformer of
about the same size train side by side on one task: their held-out loss, their accuracy against
length, and the wall-clock time of their training steps."""
from __future__ import annotations

import streamlit as st

from app.charts import architectures as charts
from app.charts import runs as charts_runs
from app.charts.labels import LOSS_UNITS
from app.session.architectures import (
    ARCHITECTURES,
    BIDIRECTIONAL,
    LABS,
    MAX_PARAMETERS,
    MIN_PARAMETERS,
    SIMILAR,
    Architectures,
    Choice,
    chance,
    choice_text,
)
from app.session.comparison import TIMED_STEPS
from app.session.probes import RECORD_EVERY
from app.widgets import state
from app.widgets.controls import live_training, round_robin_controls, round_robin_progress
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from engine.tasks.base import MAX_SEQ_LEN

STEPS = state.ARCH_STEPS
# Training time per redraw, as on Compare cells: three live figures and a table take a browser on
# the same 2-core machine half a second or more to redraw, so at 1 s of training a tick the
# networks train about two thirds of the time on screen.
TRAIN_SECONDS = 1.0
COLOURS = charts.colours_of(ARCHITECTURES)  # the transformer's colour is the same on the char LM
CHAR_LM_NOTE = (
    "No bidirectional LSTM on the char LM: its backward direction would read the very character it "
    "is asked to predict. The transformer there is causal (each position attends to itself and the "
    "past only); on recall and reversal it attends both ways, as the bidirectional LSTM reads."
)


def run() -> None:
    page_header("Compare architectures", lesson=False, own_runs="runs of its own, side by side")
    st.markdown(
        "Five kinds of network (four on the char LM), each sized to about the same number of parameters, "
        "train on the same task, from the same seed, on the same batches, in turns. Which learns fastest "
        "per step, which carries a symbol furthest, and what a step costs on this CPU?"
    )
    architectures = current()
    choose(architectures)
    controls(architectures)
    live_training(architectures, draw, STEPS, TRAIN_SECONDS)


def current() -> Architectures:
    """This session's comparison: the default task's on first use."""
    if state.get(state.ARCHITECTURES) is None:
        start(Choice.default("recall"))
    return state.get(state.ARCHITECTURES)


def start(choice: Choice) -> None:
    """A new comparison of `choice` (ValueError, nothing changed, when it is refused); a new task
    brings its own budget and length."""
    fresh = Architectures(choice)
    previous = state.get(state.ARCHITECTURES)
    if previous is not None:
        previous.playing = False  # a fragment still training it stops at its next step
    st.session_state[state.ARCHITECTURES] = fresh
    st.session_state.pop(state.ARCH_PROBLEM, None)
    if previous is None or previous.choice.task != choice.task:
        st.session_state[STEPS] = choice.lab.steps
        st.session_state[state.ARCH_TASK] = choice.task
        st.session_state[state.ARCH_LENGTH] = choice.length
        st.session_state[state.ARCH_PARAMETERS] = choice.parameters


def new_task() -> None:
    start(Choice.default(st.session_state[state.ARCH_TASK]))


def apply_choice() -> None:
    """The form's choice, or the reason it is refused (the comparison under way stays)."""
    try:
        choice = Choice(st.session_state[state.ARCH_TASK], st.session_state[state.ARCH_LENGTH],
                        st.session_state[state.ARCH_PARAMETERS])
        start(choice)
    except ValueError as err:
        st.session_state[state.ARCH_PROBLEM] = str(err)


def choose(architectures: Architectures) -> None:
    """The task (a new one starts at once, with its defaults), then its length and the networks'
    size, applied together by the form's button."""
    lab = LABS[st.session_state[state.ARCH_TASK]]
    st.selectbox("Task", tuple(LABS), key=state.ARCH_TASK, format_func=lambda task: LABS[task].title,
                 on_change=new_task, persist_state="session", help="a new task starts a new comparison at its defaults")
    with st.form("arch_choice", border=False):
        length, size, button = st.columns([2, 2, 1], vertical_alignment="bottom")
        length.number_input(lab.length_label, min_value=1, max_value=MAX_SEQ_LEN, step=1, key=state.ARCH_LENGTH,
                            persist_state="session")
        size.number_input("Parameters per network (about)", min_value=MIN_PARAMETERS, max_value=MAX_PARAMETERS,
                          step=1000, key=state.ARCH_PARAMETERS, persist_state="session",
                          help="each network's hidden size (the transformer's d_model) is searched for the count "
                               "nearest this")
        button.form_submit_button("Apply", key="arch_apply", icon=":material/check:", on_click=apply_choice,
                                  width="stretch")
    problem = state.get(state.ARCH_PROBLEM)
    if problem:
        st.error(f"That choice cannot be compared: {literal(problem)}. The comparison below goes on as it was.",
                 icon=":material/block:")
    st.markdown(f"**Comparing:** {choice_text(architectures.choice)}")
    if BIDIRECTIONAL not in architectures.configs:
        st.caption(CHAR_LM_NOTE)


def controls(architectures: Architectures) -> None:
    """Play, Step, Reset and the step they train up to."""
    round_robin_controls(architectures, "arch", STEPS, "Train each up to step", "network")
    st.caption(
        f"Each task's default budget ({LABS['recall'].steps} steps of recall, {LABS['reverse'].steps:,} of "
        f"reversal, {LABS['charlm'].steps} of the char LM) played in 41, 53 and 56 s on a 2-core CPU shared with "
        "the browser and other work."
    )


def loss(architectures: Architectures):
    task = architectures.task
    return charts_runs.loss_over_training(architectures.log_frame(), LOSS_UNITS.get(task.metric_name, "per batch"),
                                          task.baseline_loss, COLOURS)


def by_length(architectures: Architectures):
    choice = architectures.choice
    frame = architectures.by_length_frame()
    step = int(frame["step"].min())
    return charts.accuracy_by_length(
        frame, COLOURS, f"Held-out accuracy against length (step {step:,})", choice.lab.length_axis,
        chance(architectures.task), choice.length if choice.lab.by_lag else None,
    )


def draw(architectures: Architectures) -> None:
    until = state.get(STEPS)
    round_robin_progress(architectures, until, "network")
    for run in architectures.stopped():
        st.error(f"**The {run.name} {run.trainer.status}**: its loss or gradient became infinite or NaN, so that "
                 "step was not applied and it stopped there; the others train on.",
                 icon=":material/local_fire_department:")
    st.table(table(architectures), hide_index=True)
    off = architectures.sizes_frame()["off"].abs().max()
    st.caption(
        "Each network's hidden size (the transformer's d_model) is the one whose parameter count, counted on "
        "the network as built, comes nearest the target. "
        + (f"Every count is within {off:.0%} of it." if off <= SIMILAR else
           f"Some count is {off:.0%} off it: at this size the networks cannot be matched more closely (an "
           "embedding or read-out layer alone may be larger).")
    )
    left, right = st.columns(2)
    show(loss(architectures), "arch_loss", left)
    left.caption(
        f"Loss on the same {len(architectures.held_out[1]):,} held-out samples for every network, every "
        f"{RECORD_EVERY} steps and after each Step."
        + (" A line on the dashed baseline predicts no better than a constant guess."
           if architectures.task.baseline_loss is not None else "")
    )
    show(by_length(architectures), "arch_by_length", right)
    right.caption(length_caption(architectures))
    left, right = st.columns(2, vertical_alignment="center")
    show(charts.step_times(architectures.timing_frame(), COLOURS), "arch_times", left)
    right.caption(
        f"Wall-clock time of a training step (forward, backward, update; no measuring), measured in this "
        f"session over each network's latest {TIMED_STEPS} steps: the bar is the median, the whisker runs "
        "from the first quartile to the third. One thread, on a CPU other students may share, so the same "
        "network can take longer on a busy server. The transformer's attention reads every position at "
        "once, yet its step costs more here, where the networks are this small (and on reversal it reruns "
        "its decoder on the whole prefix at every output step)."
    )
    if not architectures.playing and architectures.finished(until) and not architectures.stopped():
        st.success(f"Every network reached step {until:,}. Raise 'Train each up to step' to go on.")


def length_caption(architectures: Architectures) -> str:
    choice = architectures.choice
    if choice.lab.by_lag:
        return (f"Trained at lag {choice.length}, then asked about held-out sequences of other lags, as last "
                "measured: a network that learned to count to its lag, not to remember, fails the others.")
    if choice.task == "reverse":
        return ("Every source has the same length here, so the accuracy is drawn against the output position: "
                "the k-th symbol written is the k-th from the source's end, read 2k − 1 steps before a "
                "recurrent decoder writes it (the first symbols read travel furthest through the encoder's "
                "last state).")
    return ("The char LM's windows have one length, so the accuracy is drawn against the position in the "
            "window: how many characters of context the network had read before predicting the next one.")


def table(architectures: Architectures):
    """One row per network: its shape, its parameters and how far they are off the target, and its
    latest held-out accuracy and median time per step."""
    sizes = architectures.sizes_frame().set_index("run")
    last = architectures.log_frame().groupby("run", sort=False).last()
    times = architectures.timing_frame().set_index("run")
    frame = sizes.assign(metric=last["metric"], ms=times["ms"]).reset_index()
    frame = frame.rename(columns={"run": "network", "network": "shape", "off": "vs target",
                                  "metric": "held-out accuracy", "ms": "ms per step"})
    return frame.style.format({"parameters": "{:,}", "vs target": "{:+.1%}", "held-out accuracy": "{:.1%}",
                               "ms per step": "{:.2f}"}, na_rep="–")

run()
