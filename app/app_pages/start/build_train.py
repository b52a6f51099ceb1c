"""Build & Train: pick a task and a network, then play, pause and step its training."""
from __future__ import annotations

from functools import partial

import pandas as pd
import streamlit as st

import engine
from app.charts.network import layer_table, network_diagram
from app.charts.training import gradient_norm_curve, training_curves
from app.charts.views import view
from app.session.bag_of_words_verdict import verdict
from app.session.heldout import EVAL_EVERY
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.widgets import memory_span, review_lengths, settings_form, state, uploads
from app.widgets.controls import live, training_controls
from app.widgets.corpus_needed import corpus_needed
from app.widgets.downloads import held, stem
from app.widgets.export_script import script_button
from app.widgets.figures import show
from app.widgets.header import page_header, this_tab_only, write_link
from app.widgets.literal import literal
from app.widgets.torch_upload import torch_upload
from engine import datasets
from engine.tasks import ParsedReviews
from engine.tasks.sentiment import ReviewTask


def run() -> None:
    lab = page_header("Build & Train", summary=False)
    # The settings in the sidebar, the training across the page: on a projector at 1024 x 768 a
    # third of the page cut the form's tabs and the buttons' labels ("P / S / R"), and two
    # thirds squeezed the curves.
    with st.sidebar:
        st.markdown("**Task, network and training**")
        settings(lab)
    training_controls(lab)
    live(lab, draw_training)
    if lab.setup.task == "recall":
        memory_span.expander(lab)
    network(lab)
    save_and_load(lab)


def settings(lab: Lab) -> None:
    if settings_form.needs_fill(lab.setup):
        settings_form.fill(lab.setup)
    with st.container(border=True):
        data = upload_box(lab)
        before = lab.setup
        try:
            wanted = settings_form.read(lab.setup, lab.task.spec, uploaded=data is not None or lab.upload is not None)
            # A CSV is parsed once for the server. An empty uploader (after a reload, or back from
            # another page) keeps the file the lab trains on; "Use the shipped data" drops it.
            upload = uploads.task_data(lab.setup.upload_param, data) if data is not None else lab.upload
            # an uploaded file belongs to the task it was uploaded for
            outcome = lab.change(wanted, upload if wanted.task == before.task else None)
        except datasets.CorpusMissing as missing:
            corpus_needed(missing, "The task as set here reads it; the model you had is unchanged until it is here.",
                          "settings")
            return
        except ValueError as err:
            st.error(f"{literal(err)}. The model you had is unchanged.", icon=":material/block:")
            return
    if outcome == "unchanged":
        return
    write_link(lab.setup)  # the header wrote the link before the form changed it
    if outcome == "rebuilt":
        st.toast("New settings: a fresh model was built.")
        lesson = BY_KEY.get(state.get(state.LESSON))
        if lesson is not None and lesson.setup.task != lab.setup.task:  # its text no longer applies
            st.session_state.pop(state.LESSON)
        if before.task != lab.setup.task:
            st.session_state[state.TARGET_STEPS] = engine.TASKS[lab.setup.task].preset.steps
    if wanted.task == before.task:
        settings_form.mark_shown(lab.setup)
    else:  # a new task brings its preset: redraw so every widget shows it
        st.rerun()


def upload_box(lab: Lab):
    """For tasks that read files: the student's own corpus or CSV (kept until replaced)."""
    what = lab.setup.upload_param
    if what is None:
        return None
    label = "Your own text (UTF-8)" if what == "text" else "Your own reviews (CSV with review,sentiment columns)"
    file = st.file_uploader(label, key=state.upload_key(lab.setup.task))
    if what == "csv_text":  # reviews: the file just given (parsed once, shared), else the one the lab reads
        try:
            reviews = uploads.task_data(what, file.getvalue()) if file is not None else lab.upload
        except ValueError:
            reviews = None  # the form's change below says what is wrong with it
        if isinstance(reviews, ParsedReviews):
            review_lengths.read_longer(lab, reviews)
    if file is None and lab.upload is not None:
        st.caption(f"Training on your own file ({uploads.describe(lab.upload)}).")
        st.button("Use the shipped data instead", key="shipped_data", icon=":material/undo:",
                  on_click=this_tab_only(lab.change), args=(lab.setup, None))
    return file.getvalue() if file is not None else None


def network(lab: Lab) -> None:
    st.subheader("The network as built")
    left, right = st.columns([3, 2])
    diagram = view(lab.model, "network", (), partial(network_diagram, lab.model))  # 15 ms, once a model
    show(diagram, "diagram", left, diagram=True)  # in a column: a long title breaks
    with right:
        # A table that wraps to its column: a dataframe's grid scrolled sideways in the column's 215 px
        # at 1024 px, "parameters" cut for a stacked bidirectional network ("128 → 2 × 64").
        st.table(layer_table(lab.model), hide_index=True)
        st.caption(
            "The network as built: every box is a layer, with its size and how many weights it "
            "trains. A bidirectional layer is two recurrent layers reading in opposite directions."
        )


def draw_training(lab: Lab) -> None:
    trainer, target = lab.trainer, state.target_steps()  # its progress line comes with the live fragment (live)
    if trainer.diverged_at is not None:
        diverged_panel(trainer)
    history = trainer.history_frame()
    held_out, best = lab.held_out.frame(), lab.held_out.best
    best_point = None if best is None else (best.step, best.loss, best.metric)
    figure = training_curves(history, lab.task.metric_name, lab.task.baseline_loss, held_out, best_point, lab.marks,
                             lab.task.baseline_metric)
    show(figure, "curves")
    st.caption(
        "Solid: loss (log scale) and the task's metric on each step's own training batch. Dashed: "
        f"the same network on {lab.held_out.describe()}, every {EVAL_EVERY} steps. A flat loss "
        "at the baseline means the network predicts no better than a constant. A training loss "
        "that falls while the held-out loss rises means the network is memorising its training "
        "data (overfitting). Dotted lines mark where a training setting changed."
        + baseline_text(lab, held_out)
    )
    best_step(lab)
    show(gradient_norm_curve(history, lab.setup.train.clip_norm), "grad_norm")
    st.caption(
        "The size of the whole gradient each step, before and after clipping. Spikes are "
        "exploding gradients; clipping caps what the optimizer is given."
    )
    if not lab.playing and trainer.steps_done >= target and trainer.diverged_at is None:
        st.success(f"Reached step {target:,}. Raise 'Train up to step' to go on.")


def baseline_text(lab: Lab, held_out: pd.DataFrame) -> str:
    """What the metric panel's dashed line is, with its figure, where the task has one; for reviews, whether
    the network's latest held-out score is above it."""
    task = lab.task
    if task.baseline_metric is None:
        return ""
    what, value = task.baseline_metric
    if not isinstance(task, ReviewTask):  # a language model's: always its most frequent word
        return f" Dashed grey on the right: {what}, scoring {value:.1%} on the same held-out set, the line to beat."
    text = (f" Dashed grey on the right: a {what} (logistic regression on how often each token occurs, order "
            f"thrown away) fitted on the same training reviews scores {value:.1%} on the same held-out ones: "
            "what the network gets above it, it reads from the order.")
    if len(held_out):
        step = int(held_out.iloc[-1]["step"])
        text += verdict(lab.step_said(step), step + lab.shipped_steps > 0, float(held_out.iloc[-1]["metric"]),
                        value, len(task.train_y), task.median_read, task.token_name,
                        helps="More labelled reviews, more steps, or an embedding that starts from pretrained "
                              "vectors (the Pretrained embeddings page) are what would help it.")
    return text


def best_step(lab: Lab) -> None:
    """Early stopping: the ring marks the lowest held-out loss so far; the button puts that
    step's weights back."""
    best = lab.held_out.best
    if best is None:
        return
    st.button(  # a row of its own: in a narrow column its label would be cut
        f"Go back to the best step ({best.step:,})", key="restore_best", icon=":material/history:",
        on_click=this_tab_only(lab.restore_best), disabled=lab.held_out.at_best,
        help="put back the weights that had the lowest held-out loss; the step count and the curves carry on",
    )
    now = "the network has these weights now" if lab.held_out.at_best else "training has moved on since"
    st.caption(
        f"Early stopping: the ring marks step {best.step:,}, the lowest held-out loss so far "
        f"({best.loss:.4g}); {now}."
    )


def diverged_panel(trainer: engine.Trainer) -> None:
    st.error(
        f"**Training {trainer.status}**: the loss or the gradient became infinite or NaN, so that "
        "step was not applied and the model keeps its last finite weights. Lower the learning "
        "rate or turn on gradient clipping, then press Reset. The Gradients page shows the "
        "gradient at every step and what clipping does to it.",
        icon=":material/local_fire_department:",
    )


def save_and_load(lab: Lab) -> None:
    with st.expander("Save or load the model"):
        name = stem(lab)  # no step count: the file is made on click, and would outrun it
        left, right = st.columns(2)
        left.download_button(  # made when clicked, in another thread: between two training steps
            "Download the model (.safetensors)", lambda: held(lab, engine.to_bytes, lab.model),
            f"{name}.safetensors",
            help="weights and config in one file; load it here or with engine.load in a notebook",
        )
        right.download_button(
            "Download the training history (.csv)",
            lambda: lab.trainer.history_frame().to_csv(index=False),  # published after every step
            f"{name}-history.csv", mime="text/csv",
        )
        script_button(lab)
        torch_upload(lab)


run()
