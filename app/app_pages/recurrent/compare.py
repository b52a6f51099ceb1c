"""Compare cells: the student's task and training run for a tanh RNN, a ReLU RNN, an LSTM and a
GRU side by side, their gradients through time and their losses overlaid."""
from __future__ import annotations

import streamlit as st

import engine
from app.charts import compare as charts_compare
from app.charts import gradients as cg
from app.charts.labels import LOSS_UNITS
from app.session.comparison import Comparison, setup_text
from app.session.lab import Lab
from app.session.measured import same_network
from app.session.probes import RECORD_EVERY
from app.widgets import downloads as exports
from app.widgets import state
from app.widgets.controls import live_training, round_robin_progress, set_playing
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal

STEPS = state.COMPARE_STEPS
RATIO = "‖∂L/∂h_1‖ / ‖∂L/∂h_T‖"
RATIO_BACKWARD = "← ‖∂L/∂h_T‖ / ‖∂L/∂h_1‖"  # the backward direction's, in the order it reads the steps
BIDIRECTIONAL = (
    " These networks are bidirectional: dashed, each cell's backward direction, which reads the "
    "sequence from the end, so the first step it reads is the last position, t = T−1 (its ratio is "
    "‖∂L/∂h_T^←‖ / ‖∂L/∂h_1^←‖, in the order it reads them)."
)
# Training time per redraw. Redrawing three live figures and a table costs a browser on the same
# 2-core machine half a second or more per tick (measured), so at the 0.3 s of the other pages the
# four cells would train a third of the time; at 1 s, about two thirds. Pause still lands at the
# next step: train_for checks `playing` before every one.
TRAIN_SECONDS = 1.0
# The budget a new comparison starts with: the task preset's, but at most this. On the adding
# problem every cell has made its move by step 1000, and four cells take twice as long on screen
# as their training alone (see the caption under the controls).
MAX_DEFAULT_STEPS = 1500


def run() -> None:
    lab = page_header("Compare cells", lesson=False)
    st.markdown(
        "Four networks that differ only in their cell train on the same batches, from the same "
        "seed, for the same number of steps. Watch how much of the loss's gradient reaches the "
        "first step of the sequence (left, and over training on the right), and whether the loss "
        "leaves the baseline when it does."
    )
    comparison = current(lab)
    if comparison is None:
        return
    which_setup(comparison, lab)
    controls(comparison)
    live_training(comparison, draw, STEPS, TRAIN_SECONDS)
    downloads(comparison)


def current(lab: Lab) -> Comparison | None:
    """This session's comparison. One never trained is remade from the student's setup when
    that changes (there is nothing to mix); a trained one stays, and which_setup says so.
    None, with the reason on the page, when the student's setup cannot be compared."""
    comparison = state.comparison()
    if comparison is None or not (comparison.trained or comparison.compares(lab.setup, lab.upload)):
        start(lab)
    return state.comparison()


def start(lab: Lab) -> None:
    """A new comparison from the student's setup; a new task brings its own budget."""
    previous = state.comparison()
    if previous is not None:
        previous.playing = False  # a fragment still training it stops at its next step
    try:
        comparison = Comparison(lab.setup, lab.upload, task=lab.task)
    except ValueError as err:  # over the size budget: four of them would be, too
        st.error(f"These cells cannot be compared on your setup: {literal(err)}.", icon=":material/block:")
        st.session_state.pop(state.COMPARISON, None)
        return
    st.session_state[state.COMPARISON] = comparison
    if previous is None or previous.setup.task != lab.setup.task or STEPS not in st.session_state:
        st.session_state[STEPS] = min(engine.TASKS[lab.setup.task].preset.steps, MAX_DEFAULT_STEPS)


def which_setup(comparison: Comparison, lab: Lab) -> None:
    st.markdown(f"**Comparing:** {setup_text(comparison.setup)}")
    if not comparison.compares(lab.setup, lab.upload):
        st.warning(
            "Your setup on Build & Train has changed since these cells were trained; they still "
            f"train on the settings above. Yours now: {setup_text(lab.setup)}.",
            icon=":material/sync_problem:",
        )
        st.button("Compare the cells on my setup", key="compare_new", icon=":material/refresh:", on_click=start,
                  args=(lab,))


def controls(comparison: Comparison) -> None:
    """Play and Pause act in callbacks, before the page redraws, so the button shows the new state."""
    stopped = all(run.stopped for run in comparison.runs)
    play, reset, until = st.columns([1, 1, 2], vertical_alignment="bottom")
    play.button(
        "Pause" if comparison.playing else "Play", key="compare_play", type="primary", width="stretch",
        disabled=stopped, icon=":material/pause:" if comparison.playing else ":material/play_arrow:",
        on_click=set_playing, args=(comparison, not comparison.playing),  # what the button said
    )
    reset.button(
        "Reset", key="compare_reset", width="stretch", help="fresh weights from the seed for all four; logs cleared",
        icon=":material/restart_alt:", on_click=comparison.reset,
    )
    until.number_input(
        "Steps for each cell", min_value=1, max_value=100_000, step=100, key=STEPS, persist_state="session",
        help="The cells take turns, one step each, so all four always stand within one step of each other.",
    )
    if same_network(comparison.setup):
        st.caption(
            "On the adding problem (T = 50, 64 units), 1500 steps of all four cells take about 35 s of "
            "training on a 2-core CPU, and 1 to 1½ minutes on screen with the browser on the same "
            "machine (3000, the task's preset, 2 to 3 minutes). Every cell has made its move by step 1000."
        )


def through_time(comparison: Comparison):
    return cg.compare_runs(comparison.curves_frame())


def ratio(comparison: Comparison):
    return cg.gradient_ratio_over_training(comparison.log_frame())


def loss(comparison: Comparison):
    task = comparison.task
    return charts_compare.loss_over_training(
        comparison.log_frame(), LOSS_UNITS.get(task.metric_name, "per batch"), task.baseline_loss
    )


def draw(comparison: Comparison) -> None:
    until = state.get(STEPS)
    comparison.drawn_history = comparison.history_frame()  # as of this redraw (under the lock), for its download
    round_robin_progress(comparison, until, "cell")
    stopped = comparison.stopped()
    for run in stopped:
        others = "the other cells train on" if len(stopped) < len(comparison.runs) else "so did every other cell"
        st.error(
            f"**The {run.name} {run.trainer.status}**: its loss or gradient became infinite or NaN, so that "
            f"step was not applied and it stopped there; {others}. Its lines end at its last measurement.",
            icon=":material/local_fire_department:",
        )
    for run in comparison.runs:
        steps = cg.not_finite_steps(run.curves[None].double().numpy())  # [1, directions, T]
        if steps:
            st.warning(
                f"The {run.name}'s gradient on the probe sample overflowed at its last measurement (step "
                f"{run.log.last['step']:,}): ‖∂L/∂h_t‖ is infinite or NaN at {steps} of {run.curves.shape[-1]} "
                "steps, which its lines leave out.",
                icon=":material/warning:",
            )
    left, right = st.columns(2)
    show(through_time(comparison), "compare_curves", left)
    measured = same_network(comparison.setup)
    left.caption(
        f"‖∂L/∂h_t‖ of each cell on the same sample, as last measured (every {RECORD_EVERY} steps): "
        "the further a line falls towards t = 0, the less the first steps can learn."
        + (" On the adding problem, before training all four fall by about ten orders of magnitude or more "
           "over 50 steps." if measured else "")
        + (BIDIRECTIONAL if comparison.setup.model.bidirectional else "")
    )
    show(ratio(comparison), "compare_ratio", right)
    both = BIDIRECTIONAL if comparison.setup.model.bidirectional else ""
    right.caption(
        "The share of the gradient that reaches the first step."
        + (" Measured on the adding problem (T = 50, seed 0) over the page's first 1500 steps: the tanh "
           "RNN, LSTM and GRU start between 3e-11 and 1e-10 (the ReLU RNN at 1e-21); the GRU passes 0.1 by "
           "step 400 and the LSTM near step 750, and both stay above it; the ReLU RNN's, below 1e-12 until "
           "step 900, rises to around 1e-7 from step 1000 on, with one spike to 0.1; the tanh RNN's stays "
           "below 1e-6 throughout." if measured else
           " A cell whose ratio climbs by orders of magnitude is learning to carry the gradient back.")
        + both
    )
    left, right = st.columns(2)
    show(loss(comparison), "compare_loss", left)
    left.caption(
        f"Loss on the same {len(comparison.held_out[1]):,} held-out samples for every cell (those Build & "
        f"Train scores), every {RECORD_EVERY} steps. "
        "A cell whose line stays on the dashed baseline predicts no better than a constant."
        + (" On the adding problem the tanh RNN stays there; the GRU leaves it near step 300, the LSTM "
           "near step 750 and the ReLU RNN near step 1000, each as its gradient starts reaching the first "
           "step." if measured else "")
    )
    metric = comparison.task.metric_name
    formats = {RATIO: "{:.1e}", RATIO_BACKWARD: "{:.1e}", "held-out loss": "{:.4g}", metric: "{:.3f}"}
    table = latest(comparison)
    shown = table.style.format({k: v for k, v in formats.items() if k in table})
    right.table(shown, hide_index=True)
    right.caption("The last measurement of each cell.")
    if not comparison.playing and comparison.finished(until) and not comparison.stopped():
        st.success(f"Every cell reached step {until:,}. Raise 'Steps for each cell' to go on.")


def latest(comparison: Comparison):
    """One row per cell: its last measurement."""
    log = comparison.log_frame().groupby("run", sort=False).last().reset_index()
    return log.rename(columns={"ratio": RATIO, "ratio_backward": RATIO_BACKWARD, "loss": "held-out loss",
                               "metric": comparison.task.metric_name})


def downloads(comparison: Comparison) -> None:
    """Made when clicked, in another thread, from the runs as they are then: the logs and curves
    are read without the lock, the history under it when it is free, else as drawn last (see
    exports.now_or_drawn), so no download waits for a training step."""

    name = f"unrolled-{comparison.setup.task}-compare"
    with st.expander("Download the numbers and the figures"):
        top = exports.button_row()
        top.download_button(
            "Gradients per step (.csv)", lambda: comparison.curves_frame().to_csv(index=False),
            f"{name}-gradients.csv", mime="text/csv",
        )
        top.download_button(
            "Ratio and loss over training (.csv)", lambda: comparison.log_frame().to_csv(index=False),
            f"{name}-log.csv", mime="text/csv",
        )
        top.download_button(
            "Training steps, thinned past 4,096 (.csv)",
            lambda: exports.now_or_drawn(comparison, comparison.history_frame, lambda: comparison.drawn_history
                                         ).to_csv(index=False),
            f"{name}-history.csv", mime="text/csv",
        )
        bottom = exports.button_row()
        for label, figure, file in [
            ("Gradients per step", through_time, "gradients"),
            ("Ratio over training", ratio, "ratio"),
            ("Loss over training", loss, "loss"),
        ]:
            bottom.download_button(
                f"{label}, interactive (.html)",
                lambda figure=figure: figure(comparison).to_html(include_plotlyjs=True),
                f"{name}-{file}.html", mime="text/html",
            )
        st.caption(exports.PNG_NOTE)


run()
