"""Compare cells: the student's task and training run side by side for a tanh RNN, a ReLU RNN, an
LSTM and a GRU, for the student's own network from each initialisation of W_hh, for echo state
networks at five spectral radii, or for the student's network without and with layer normalisation
and zoneout; their gradients through time and their losses overlaid."""
from __future__ import annotations

from functools import partial

import streamlit as st

import engine
from app.charts import gradients as cg
from app.charts import runs as charts_runs
from app.charts.labels import LOSS_UNITS
from app.charts.views import view
from app.session import ensembles
from app.session.comparison import KINDS, Comparison, cell_name, setup_text
from app.session.lab import Lab
from app.session.lesson_runs import seeded
from app.session.lessons import BY_KEY, LESSONS, Lesson
from app.session.probes import RECORD_EVERY
from app.widgets import downloads as exports
from app.widgets import lesson_band, state
from app.widgets.controls import live_training, round_robin_controls, round_robin_progress
from app.widgets.corpus_needed import corpus_needed
from app.widgets.figures import show
from app.widgets.header import lesson_banner, page_header
from app.widgets.literal import literal
from engine import datasets

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
# Short enough for one row of the segmented control at 1024 px
KIND_LABELS = {"cells": "the four cells", "initialisations": "initialisations", "reservoirs": "echo state networks",
               "normalisation": "layer norm, zoneout"}
EACH = {"cells": "cell", "initialisations": "start", "reservoirs": "reservoir", "normalisation": "variant"}  # one run
REFUSED = {"cells": "These cells", "initialisations": "These initialisations", "reservoirs": "Echo state networks",
           "normalisation": "Layer normalisation and zoneout"}


def run() -> None:
    lab = page_header("Compare cells", lesson=False, own_runs="runs of its own, side by side")
    if opened_here():
        lesson_banner()  # the other lessons' banners speak of their own pages
    kind = pick_kind()
    if kind == "cells":
        st.markdown(
            "Four networks that differ only in their cell train on the same batches, from the same "
            "seed, for the same number of steps. Watch how much of the loss's gradient reaches the "
            "first step of the sequence (left, and over training on the right), and whether the loss "
            "leaves the baseline when it does."
        )
    elif kind == "reservoirs":
        st.markdown(
            "Echo state networks (Jaeger 2001): tanh RNNs of your network's size whose recurrent weights "
            r"$W_{hh}$ are drawn once, scaled to a spectral radius $\rho$ (the largest $|\lambda|$ of "
            r"$W_{hh}$), and never trained, nor are their input weights; only the read-out, the head, learns. "
            r"Below $\rho = 1$ the reservoir's state forgets its input step by step; far above it the state is "
            "chaotic. Watch which radius keeps what the task needs, and how much gradient reaches the first step."
        )
    elif kind == "normalisation":
        st.markdown(
            f"Your network, a {cell_name(lab.setup.model)}, trains four times on the same batches from the same start: "
            "as it is, with layer normalisation (Ba et al. 2016; here each gate's input and recurrent sums on their "
            r"own are rescaled to mean 0 and variance 1 over the units, then by a learned gain, $\mathrm{LN}(W x_t) + "
            r"\mathrm{LN}(W h_{t-1})$), with zoneout (Krueger et al. 2017: while training, each unit keeps its "
            r"previous value with probability $p$, $h_t = m_t \odot h_{t-1} + (1 - m_t) \odot \tilde h_t$; "
            r"evaluated and recorded with the expectation $p\,h_{t-1} + (1-p)\,\tilde h_t$), and with both. "
            "Watch whether the loss leaves the baseline, and how much gradient each passes back to the first step."
        )
    else:
        cfg = lab.setup.model
        st.markdown(
            f"Your network, a {cell_name(cfg)}, trains from each way of starting its recurrent "
            "weights $W_{hh}$, on the same batches for the same number of steps: PyTorch's default (uniform in "
            r"$\pm 1/\sqrt{H}$), orthogonal (Henaff et al.: $\lVert W_{hh} h\rVert = \lVert h\rVert$), the "
            "identity with zero biases"
            + (" (IRNN, Le et al.: a ReLU RNN that passes $h_{t-1}$ on unchanged)"
               if (cfg.arch, cfg.activation) == ("rnn", "relu") else "")
            + (r", and for an LSTM the default with a forget-gate bias of 1 ($f_t$ starts near "
               r"$\sigma(1) \approx 0.73$: remember by default)." if lab.setup.model.arch == "lstm" else ".")
            + " Everything else is your network as Build & Train sets it. Watch which start lets the "
            "gradient reach the first steps, and the loss leave the baseline."
        )
    comparison = current(lab, kind)
    if comparison is None:
        return
    which_setup(comparison, lab)
    controls(comparison)
    live_training(comparison, draw, STEPS, TRAIN_SECONDS)
    downloads(comparison)


def opened_here() -> Lesson | None:
    """The open lesson, if it is one of this page's."""
    lesson = BY_KEY.get(state.get(state.LESSON))
    return lesson if lesson is not None and lesson.page == "compare" else None


def pick_kind() -> str:
    """What the runs differ in: the cell, or how the student's network starts. An open lesson
    picks it on arrival (opening one clears the choice, state.RESET_BY_A_LESSON)."""
    lesson = opened_here()
    st.session_state.setdefault(state.COMPARE_KIND, lesson.compare_kind if lesson else "cells")
    return st.segmented_control(
        "Compare", KINDS, key=state.COMPARE_KIND, format_func=KIND_LABELS.get, required=True,
        persist_state="session",  # kept while the student is on another page
        help="The four cells on your task and network; your network (its cell included) from each "
             "initialisation of its recurrent weights; echo state networks of its size, whose recurrent "
             "weights never train; or your network without and with layer normalisation and zoneout. Each "
             "kind's runs are kept while you look at another.",
    )


def current(lab: Lab, kind: str) -> Comparison | None:
    """This session's comparison of `kind`. One never trained is remade from the student's setup
    when that changes (there is nothing to mix); a trained one stays, and which_setup says so.
    Switching kinds sets the other kind's comparison aside, paused, to come back to. None, with the
    reason on the page, when the student's setup cannot be compared."""
    comparison = state.comparison()
    if comparison is not None and comparison.kind != kind:
        comparison.playing = False  # a fragment still training it stops at its next step
        aside = st.session_state.setdefault(state.COMPARISONS_ASIDE, {})
        aside[comparison.kind] = comparison
        comparison = st.session_state[state.COMPARISON] = aside.pop(kind, None)
    if comparison is None or not (
            comparison.trained or comparison.compares(lab.setup, lab.upload)):
        start(lab, kind)
    return state.comparison()


def start(lab: Lab, kind: str) -> None:
    """A new comparison from the student's setup; a new task brings its own budget."""
    previous = state.comparison()
    if previous is not None:
        previous.playing = False  # a fragment still training it stops at its next step
    try:
        comparison = Comparison(lab.setup, lab.upload, task=lab.task, kind=kind)
    except datasets.CorpusMissing as missing:  # your model was opened before its task's corpus was here
        corpus_needed(missing, f"{REFUSED[kind]} train on your model's task, which reads it.", "compare")
        st.session_state.pop(state.COMPARISON, None)
        return
    except ValueError as err:  # over the size budget (so would every run be), or no such runs for it
        st.error(f"{REFUSED[kind]} cannot be compared on your setup: {literal(err)}.", icon=":material/block:")
        st.session_state.pop(state.COMPARISON, None)
        return
    st.session_state[state.COMPARISON] = comparison
    lesson = opened_here()
    if lesson is not None:
        st.session_state[STEPS] = lesson.steps
    elif previous is None or previous.setup.task != lab.setup.task or STEPS not in st.session_state:
        st.session_state[STEPS] = min(engine.TASKS[lab.setup.task].preset.steps, MAX_DEFAULT_STEPS)


def which_setup(comparison: Comparison, lab: Lab) -> None:
    kind = comparison.kind
    st.markdown(f"**Comparing:** {setup_text(comparison.setup, kind)}")
    if not comparison.compares(lab.setup, lab.upload):
        st.warning(
            "Your setup on Build & Train has changed since these runs were trained; they still "
            f"train on the settings above. Yours now: {setup_text(lab.setup, kind)}.",
            icon=":material/sync_problem:",
        )
        st.button("Compare again on my setup", key="compare_new", icon=":material/refresh:", on_click=start,
                  args=(lab, kind))


def controls(comparison: Comparison) -> None:
    round_robin_controls(comparison, "compare", STEPS, "Steps for each run", EACH[comparison.kind])
    lesson = lesson_of(comparison)
    ensemble = None if lesson is None else ensembles.shipped(lesson.key)
    if ensemble is not None:
        st.caption(f"These runs' {lesson.steps:,} steps trained in about {ensemble.minutes():.0f} min on this kind "
                   "of CPU (one thread, measured; a playing page also draws)." + measured_here(lesson, "controls"))


def through_time(comparison: Comparison):
    what = "Vanishing or exploding gradients" if comparison.kind == "reservoirs" else "Vanishing gradients"
    return cg.compare_runs(comparison.curves_frame(), EACH[comparison.kind], what)


def ratio(comparison: Comparison):
    return cg.gradient_ratio_over_training(comparison.log_frame())


def loss(comparison: Comparison):
    task = comparison.task
    units = LOSS_UNITS.get(task.metric_name, "per batch")
    return charts_runs.loss_over_training(comparison.log_frame(), units, task.baseline_loss,
                                          title=f"Loss of each {EACH[comparison.kind]} over training")


def draw(comparison: Comparison) -> None:
    until = state.get(STEPS)
    each = EACH[comparison.kind]
    round_robin_progress(comparison, until, each)
    lesson = opened_here()
    if lesson is not None and the_lesson(comparison, lesson.key, any_seed=True):
        lesson_band.for_runs(comparison, comparison.log_frame(), comparison.task.metric_name)
    stopped = comparison.stopped()
    for run in stopped:
        others = f"the other {each}s train on" if len(stopped) < len(comparison.runs) else f"so did every other {each}"
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
    progress = tuple(run.trainer.steps_done for run in comparison.runs)  # the figures move only as runs train
    left, right = st.columns(2)
    def drawn(name: str, build):  # kept with the first run: Reset, a seed, a setting make new runs
        return view(comparison.runs[0], name, (), build, version=progress)

    show(drawn("compare_through_time", partial(through_time, comparison)), "compare_curves", left)
    lesson = lesson_of(comparison)  # its data file's sentences quote what its ensemble measured
    esn = lesson is not None and lesson.key == "echo-state"
    left.caption(
        f"‖∂L/∂h_t‖ of each {each} on the same sample, as last measured (every {RECORD_EVERY} steps): "
        "the further a line falls towards t = 0, the less the first steps can learn."
        + measured_here(lesson, "through_time")
        + (" A reservoir's recurrent weights never change: only its read-out does." if esn else "")
        + (BIDIRECTIONAL if comparison.setup.model.bidirectional else "")
    )
    show(drawn("compare_ratio", partial(ratio, comparison)), "compare_ratio", right)
    both = BIDIRECTIONAL if comparison.setup.model.bidirectional else ""
    right.caption(
        "The share of the gradient that reaches the first step."
        + (measured_here(lesson, "ratio") if lesson is not None else
           f" A {each} whose ratio climbs by orders of magnitude is learning to carry the gradient back.")
        + both
    )
    left, right = st.columns(2)
    show(drawn("compare_loss", partial(loss, comparison)), "compare_loss", left)
    left.caption(
        f"Loss on the same {len(comparison.held_out[1]):,} held-out samples for every {each} (those Build & "
        f"Train scores), every {RECORD_EVERY} steps. "
        f"A {each} whose line stays on the dashed baseline predicts no better than a constant."
        + measured_here(lesson, "loss")
    )
    metric = comparison.task.metric_name
    # three significant figures, not three decimals: the IRNN's R² after one step was -74084.812
    formats = {RATIO: "{:.1e}", RATIO_BACKWARD: "{:.1e}", "held-out loss": "{:.4g}", metric: "{:.3g}"}
    table = latest(comparison)
    shown = table.style.format({k: v for k, v in formats.items() if k in table})
    right.table(shown, hide_index=True)
    right.caption(f"The last measurement of each {each}.")
    if not comparison.playing and comparison.finished(until) and not comparison.stopped():
        st.success(f"Every {each} reached step {until:,}. Raise 'Steps for each run' to go on.")


def lesson_of(comparison: Comparison) -> Lesson | None:
    """The lesson of this page whose runs these are (its seed too), so the captions may quote what its
    ensemble measured; None for any other runs."""
    return next((lesson for lesson in LESSONS if lesson.page == "compare" and the_lesson(comparison, lesson.key)),
                None)


def measured_here(lesson: Lesson | None, figure: str) -> str:
    """The lesson's measured sentence for `figure` (its data file's [captions]), ranges written in."""
    text = "" if lesson is None else lesson.caption(figure)
    return f" Measured for this lesson's runs (seeds and kernel paths as its band): {text}" if text else ""


def the_lesson(comparison: Comparison, key: str, any_seed: bool = False) -> bool:
    """Whether these are the runs lesson `key` measured (its kind, task, networks and training;
    whatever start the student's own network has; with `any_seed`, from any seed: its ensemble's)."""
    lesson = BY_KEY[key]
    setup = seeded(lesson.setup, comparison.setup.train.seed) if any_seed else lesson.setup
    return comparison.compares(setup, kind=lesson.compare_kind)


def latest(comparison: Comparison):
    """One row per run: its last measurement."""
    log = comparison.log_frame().groupby("run", sort=False).last().reset_index()
    return log.rename(columns={"ratio": RATIO, "ratio_backward": RATIO_BACKWARD, "loss": "held-out loss",
                               "metric": comparison.task.metric_name})


def downloads(comparison: Comparison) -> None:
    """Made when clicked, in another thread, from the runs as they are then: the logs and curves
    are read without the lock, the history under it when it is free, else as drawn last (see
    exports.published_or_held), so no download waits for a training step."""

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
            lambda: comparison.history_frame().to_csv(index=False),  # published after every step
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
