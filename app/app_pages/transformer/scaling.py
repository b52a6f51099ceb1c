"""Why √d_k: random scores against the width of a head (Vaswani et al. 2017's footnote drawn), then
the student's transformer trained twice side by side, with and without the division, its
softmax's entropy and the gradient reaching its scores measured as they train."""
from __future__ import annotations

import streamlit as st

from app.app_pages.transformer.models import is_transformer
from app.charts import saturation as charts
from app.session.comparison import setup_text
from app.session.lab import Lab
from app.session.lesson_runs import seeded
from app.session.lessons import BY_KEY
from app.session.scaling import SATURATION_SAMPLES, ScalingRuns
from app.session.transformers import WIDE_REVERSAL
from app.widgets import downloads as exports
from app.widgets import lesson_band, state
from app.widgets.controls import live_training, round_robin_controls, round_robin_progress, stopped_runs
from app.widgets.corpus_needed import corpus_needed
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from app.widgets.open_model import open_button
from engine import datasets

STEPS = state.SCALING_STEPS
FORMULA = (r"\mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V \qquad\text{or}\qquad"
           r"\mathrm{softmax}\left(QK^\top\right)V\;?")
# Training time per redraw, as on Compare cells: four live figures and a table take a browser on
# the same 2-core machine half a second or more to redraw.
TRAIN_SECONDS = 1.0
LESSON = BY_KEY["why-sqrt-dk"]


def run() -> None:
    lab = page_header("Why √d_k", own_runs="two runs of its own")
    st.markdown(
        "Each head scores a query q against every key k with a dot product. If their d_k components are "
        "independent with mean 0 and variance 1, then q·k = Σ q_i k_i has mean 0 and variance d_k "
        "(Vaswani et al. 2017, §3.2.1): the wider the head, the larger the scores, and a softmax of large "
        "scores puts nearly all its weight on one key, where its gradient is nearly 0. So the scores are "
        "divided by √d_k:")
    st.latex(FORMULA)
    show(charts.spread_by_width(spread()), "sdk_spread")
    st.caption(
        f"{charts.ROWS:,} random queries against {charts.KEYS} random keys for each width. Orange, the scores "
        "as they are: their spread grows as √d_k (16 at d_k = 256) and the softmax's entropy falls towards 0, "
        "a one-hot row. Blue, divided by √d_k: the spread stays at 1 and the rows stay soft at every width.")
    st.subheader("Trained: your transformer, with and without the division")
    if not is_transformer(lab):
        offer(lab)
        return
    runs = current(lab)
    if runs is None:
        return
    which_setup(runs, lab)
    controls(runs)
    live_training(runs, draw, STEPS, TRAIN_SECONDS)
    downloads(runs)


@st.cache_data(show_spinner=False)
def spread():
    """The same random draws for every session (seeded): 0.5 s to draw, once per server."""
    return charts.random_scores()


def offer(lab: Lab) -> None:
    st.info(f"Your model is {lab.setup.model.arch.upper()}: it has no attention scores to divide. Open a "
            "transformer with one wide head (d_model = d_k = 256) on reversing 10 symbols (it replaces your "
            "model; Build & Train sets it back):", icon=":material/info:")
    open_button(lab, "Open a transformer with one wide head", WIDE_REVERSAL, LESSON.steps, key="scaling.open")


def current(lab: Lab) -> ScalingRuns | None:
    """This session's two runs. Never trained, they are remade from the student's setup when that
    changes; trained, they stay, and which_setup says so. None, with the reason on the page, when
    the setup cannot be run twice."""
    runs = state.get(state.SCALING)
    if runs is None or not (runs.trained or runs.compares(lab.setup, lab.upload)):
        start(lab)
    return state.get(state.SCALING)


def start(lab: Lab) -> None:
    """Two fresh runs of the student's setup, to the step the Lab trains up to."""
    previous = state.get(state.SCALING)
    if previous is not None:
        previous.playing = False  # a fragment still training them stops at its next step
    try:
        runs = ScalingRuns(lab.setup, lab.upload, task=lab.task)
    except datasets.CorpusMissing as missing:  # your model was opened before its task's corpus was here
        corpus_needed(missing, "Your transformer's two runs here train on your model's task, which reads it.",
                      "scaling")
        st.session_state.pop(state.SCALING, None)
        return
    except ValueError as err:  # over the size budget
        st.error(f"Your transformer cannot be trained twice here: {literal(err)}.", icon=":material/block:")
        st.session_state.pop(state.SCALING, None)
        return
    st.session_state[state.SCALING] = runs
    st.session_state[STEPS] = state.get(state.TARGET_STEPS) or LESSON.steps


def which_setup(runs: ScalingRuns, lab: Lab) -> None:
    model = runs.setup.model
    st.markdown(f"**Training twice:** {setup_text(runs.setup)} · transformer, d_model {model.hidden_size}, "
                f"{model.num_heads} head{'s' * (model.num_heads > 1)} (d_k = {model.hidden_size // model.num_heads})"
                f", {model.num_layers} block{'s' * (model.num_layers > 1)} per stack")
    if not runs.compares(lab.setup, lab.upload):
        st.warning("Your setup on Build & Train has changed since these runs were trained; they still train on "
                   f"the settings above. Yours now: {setup_text(lab.setup)}.", icon=":material/sync_problem:")
        st.button("Train my setup twice instead", key="scaling_new", icon=":material/refresh:", on_click=start,
                  args=(lab,))


def controls(runs: ScalingRuns) -> None:
    """Play, Step, Reset and the step they train up to."""
    round_robin_controls(runs, "scaling", STEPS, "Train each up to step", "run")


def draw(runs: ScalingRuns) -> None:
    until = state.get(STEPS)
    round_robin_progress(runs, until, "run")
    stopped_runs(runs)
    log = runs.log_frame()
    if state.get(state.LESSON) == LESSON.key and runs.compares(seeded(LESSON.setup, runs.setup.train.seed)):
        lesson_band.for_runs(runs, log, runs.task.metric_name)
    st.table(table(log, runs.task.metric_name), hide_index=True)
    left, right = st.columns(2)
    show(charts.metric_over_training(log, runs.task.metric_name), "sdk_metric", left)
    left.caption(f"Scored on the same {len(runs.held_out[1]):,} held-out samples for both, every 25 steps and "
                 "after each Step. Both start from the same weights: the division draws nothing.")
    show(charts.entropy_over_training(log), "sdk_entropy", right)
    right.caption(
        f"The mean entropy of every attention row of every head, on {SATURATION_SAMPLES} held-out samples: "
        "dashed, what it would be if each row spread its weight evenly over the keys it may see; 0 is "
        "one-hot. Without the division the rows start nearly one-hot and stay so.")
    left, right = st.columns(2, vertical_alignment="center")
    show(charts.gradient_over_training(log), "sdk_gradient", left)
    right.caption(
        "‖∂L/∂z‖ over the softmax inputs z of every head, on the same samples. ∂L/∂z_i = α_i (g_i − Σ_j α_j g_j), "
        "g = ∂L/∂α: where one weight α_i is near 1 and the rest near 0, every term is near 0, so a "
        "saturated softmax passes almost nothing back to W_Q and W_K, and the attention cannot move to the "
        "right key. Late in training the divided run's gradient falls too, for another reason: its loss is "
        "near 0.")
    if not runs.playing and runs.finished(until) and not runs.stopped():
        st.success(f"Both runs reached step {until:,}. Raise 'Train each up to step' to go on.")


def table(log, metric_name: str):
    """The latest measurement of each run."""
    last = log.groupby("run", sort=False).last().reset_index()
    frame = last[["run", "step", "metric", "loss", "entropy", "logit_grad_norm"]].rename(columns={
        "metric": f"held-out {metric_name}", "loss": "held-out loss", "entropy": "entropy (nats)",
        "logit_grad_norm": "‖∂L/∂z‖"})
    formats = {f"held-out {metric_name}": "{:.1%}" if metric_name == "accuracy" else "{:.3f}",
               "held-out loss": "{:.3f}", "entropy (nats)": "{:.3f}", "‖∂L/∂z‖": "{:.2e}", "step": "{:,}"}
    return frame.style.format(formats)


def downloads(runs: ScalingRuns) -> None:
    """Every measurement of both runs (read without the lock: rows are only appended, each whole)."""
    with st.expander(exports.EXPANDER):
        st.download_button("Both runs' measurements (.csv)", lambda: runs.log_frame().to_csv(index=False),
                           f"unrolled-{runs.setup.task}-scaling.csv", mime="text/csv")
        st.caption(exports.PNG_NOTE)


run()
