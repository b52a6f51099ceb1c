"""The settings form of the Build & Train page: widgets in, a Setup out.

Widgets hold what the student typed; the Lab holds what was accepted. When the two differ
because the Lab changed elsewhere (a lesson, a link, an uploaded model), `fill` writes the Lab's
setup into the widgets before they are drawn. A refused setting leaves the widgets as typed and
the Lab as it was, with the reason on the page.
"""
from __future__ import annotations

import dataclasses

import streamlit as st

import engine
from app.session.link import FILE_PARAMS, OFFERED, Setup, preset_setup
from app.widgets import state
from app.widgets.state import form_key as key
from engine.config import ACTIVATIONS, ARCHS, INITS
from engine.train_config import OPTIMIZERS

KEEP = "session"  # widgets keep their values while hidden (a GRU has no forget bias) and across pages


def fill(setup: Setup) -> None:
    """Show `setup` in the widgets (call before they are drawn)."""
    st.session_state[key("task", "name")] = setup.task
    for name, value in setup.task_params.items():
        st.session_state[key("task", name)] = value
    for section, values in (("model", setup.model.to_dict()), ("train", setup.train.to_dict())):
        for name, value in values.items():
            st.session_state[key(section, name)] = value
        for name in ("forget_bias", "clip_norm", "clip_value"):
            if name in values:  # optional numbers: a checkbox says whether they are on
                st.session_state[key(section, name + "_on")] = values[name] is not None
                st.session_state[key(section, name)] = 1.0 if values[name] is None else values[name]
        if section == "model" and values["spectral_radius"] is None:  # shown only with init="scaled"
            st.session_state[key(section, "spectral_radius")] = 1.0
    st.session_state[state.FORM_SYNCED] = setup


def needs_fill(setup: Setup) -> bool:
    return st.session_state.get(state.FORM_SYNCED) != setup or key("task", "name") not in st.session_state


def mark_shown(setup: Setup) -> None:
    """The widgets, as the student set them, show `setup`: nothing to fill."""
    st.session_state[state.FORM_SYNCED] = setup


def optional_number(section: str, name: str, label: str, help: str) -> float | None:
    on = st.checkbox(label, key=key(section, name + "_on"), persist_state=KEEP, help=help)
    value = st.number_input(f"{label}: value", key=key(section, name), persist_state=KEEP, format="%g", disabled=not on)
    return value if on else None


def task_params_form(current: Setup) -> dict:
    """A widget per task parameter: a radio of the values the task lists for it (Task.choices),
    a checkbox for a flag, a number input otherwise."""
    choices = engine.TASKS[current.task].choices
    params = {}
    for param, default in current.task_params.items():
        widget_key = key("task", param)
        if param in choices:
            params[param] = st.radio(param.replace("_", " "), choices[param], key=widget_key, persist_state=KEEP,
                                     horizontal=True)
        elif isinstance(default, bool):
            params[param] = st.checkbox(param.replace("_", " "), key=widget_key, persist_state=KEEP)
        elif isinstance(default, float):
            params[param] = st.number_input(param.replace("_", " "), key=widget_key, persist_state=KEEP, format="%g")
        else:
            params[param] = st.number_input(param.replace("_", " "), key=widget_key, persist_state=KEEP, step=1)
    return params


def model_form(task_spec: engine.TaskSpec) -> dict:
    s = "model"
    values = {"arch": st.selectbox("Cell", ARCHS, key=key(s, "arch"), persist_state=KEEP, format_func=str.upper)}
    arch = values["arch"]
    values["activation"] = (
        st.selectbox("Activation", ACTIVATIONS, key=key(s, "activation"), persist_state=KEEP)
        if arch == "rnn" else "tanh"
    )
    values["hidden_size"] = st.number_input("Hidden units H", key=key(s, "hidden_size"), persist_state=KEEP, step=8)
    values["num_layers"] = st.number_input("Layers (stacked)", key=key(s, "num_layers"), persist_state=KEEP, step=1)
    values["bidirectional"] = st.checkbox("Bidirectional", key=key(s, "bidirectional"), persist_state=KEEP)
    values["peephole"] = arch == "lstm" and st.checkbox(
        "Peephole connections", key=key(s, "peephole"), persist_state=KEEP,
        help="gates also see c_t (Gers & Schmidhuber 2000)",
    )
    values["dropout"] = (
        st.number_input("Dropout between layers", key=key(s, "dropout"), persist_state=KEEP, format="%g", step=0.1)
        if values["num_layers"] > 1 else 0.0
    )
    if task_spec.input_kind == "tokens":
        values["embedding_dim"] = st.number_input("Embedding size", key=key(s, "embedding_dim"), persist_state=KEEP,
                                                  step=8)
    values["init"] = st.selectbox("Recurrent weights start", INITS, key=key(s, "init"), persist_state=KEEP)
    values["spectral_radius"] = (
        st.number_input("Spectral radius of W_hh", key=key(s, "spectral_radius"), persist_state=KEEP, format="%g",
                        step=0.1)
        if values["init"] == "scaled" else None
    )
    values["forget_bias"] = (
        optional_number(s, "forget_bias", "Forget-gate bias", "start the forget gate open: 1 to 3 are common")
        if arch == "lstm" else None
    )
    return values


def train_form() -> dict:
    s = "train"
    return {
        "optimizer": st.selectbox("Optimizer", OPTIMIZERS, key=key(s, "optimizer"), persist_state=KEEP),
        "lr": st.number_input("Learning rate", key=key(s, "lr"), persist_state=KEEP, format="%g", step=1e-3),
        "batch_size": st.number_input("Batch size", key=key(s, "batch_size"), persist_state=KEEP, step=8),
        "clip_norm": optional_number(s, "clip_norm", "Clip gradient norm",
                                     "rescale the whole gradient to at most this norm"),
        "clip_value": optional_number(s, "clip_value", "Clip each gradient value", "clamp every entry to ±value"),
        "bptt_window": st.number_input(
            "Truncated BPTT window (0 = full)", key=key(s, "bptt_window"), persist_state=KEEP, step=1,
            help="backpropagate through at most this many steps",
        ),
        "seed": st.number_input(
            "Seed", key=key(s, "seed"), persist_state=KEEP, step=1,
            help="seeds the batches from here on; Reset to also start from this seed's weights",
        ),
    }


def read(current: Setup, task_spec: engine.TaskSpec) -> Setup:
    """Draw the form and return the setup it shows. Raises ValueError for a refused value."""
    task_tab, model_tab, train_tab = st.tabs(["Task", "Model", "Training"])
    with task_tab:
        name = st.selectbox(
            "Task", OFFERED, key=key("task", "name"), persist_state=KEEP,
            format_func=lambda t: f"{t}: {engine.TASKS[t].help}",
        )
        if name != current.task:  # a new task starts from its own preset
            return preset_setup(name)
        params = task_params_form(current)
    with model_tab:
        model_values = model_form(task_spec)
    with train_tab:
        train_values = train_form()
    defaults = dataclasses.asdict(current.model)
    model = engine.ModelConfig(**{**defaults, **model_values})
    train = engine.TrainConfig(**train_values)
    return Setup(name, model, train, {k: v for k, v in params.items() if k not in FILE_PARAMS})
