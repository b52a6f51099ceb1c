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
from app.session.link import FILE_PARAMS, OFFERED, Setup, default_where_unused, preset_setup
from app.widgets import state
from app.widgets.state import form_key as key
from engine.config import ACTIVATIONS, INITS, MODEL_ARCHS, POSITION_ENCODINGS, SCORES, applies
from engine.tasks.base import DECODERS
from engine.train_config import OPTIMIZERS

MODEL_FIELDS = {f.name: f for f in dataclasses.fields(engine.ModelConfig)}
KEEP = "session"  # widgets keep their values while hidden (a GRU has no forget bias) and across pages
ARCH_NAMES = {"rnn": "RNN (Elman)", "lstm": "LSTM", "gru": "GRU", "transformer": "Transformer"}
NO_ATTENTION = "none"
SCORE_NAMES = {NO_ATTENTION: "none (the final state only)", "dot": "dot: s·h (Luong)",
               "general": "general: sᵀW h (Luong)", "additive": "additive: vᵀtanh(W[s; h]) (Bahdanau)",
               "scaled_dot": "scaled dot: s·h / √d", "cosine": "content-based: β cos(s, h)",
               "location": "location-based: softmax(W s), no h"}


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
        if section == "model":
            if values["spectral_radius"] is None:  # shown only with init="scaled"
                st.session_state[key(section, "spectral_radius")] = 1.0
            st.session_state[key(section, "attention")] = values["attention"] or NO_ATTENTION
            st.session_state[key(section, "dim_feedforward")] = values["dim_feedforward"] or 0
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


def task_params_form(current: Setup, uploaded: bool = False) -> dict:
    """A widget per task parameter: a radio of the values the task lists for it (Task.choices,
    each shown by the name the task gives it, if any: CharLMTask.choice_names), a checkbox for a
    flag, a number input otherwise. While the student's own file is `uploaded`, the shipped corpus
    it replaces is greyed out (it showed "Python source" picked under a file the lab trained on)."""
    choices = engine.TASKS[current.task].choices
    names = getattr(engine.TASKS[current.task], "choice_names", {})  # what each value reads as ("Tiny Shakespeare")
    params = {}
    for param, default in current.task_params.items():
        widget_key = key("task", param)
        if param in choices:
            shown = names.get(param, {})
            replaced = uploaded and param == "corpus"
            params[param] = st.radio(param.replace("_", " "), choices[param], key=widget_key, persist_state=KEEP,
                                     horizontal=True, format_func=lambda value, shown=shown: shown.get(value, value),
                                     disabled=replaced,
                                     help="your file replaces the shipped corpus" if replaced else None)
        elif isinstance(default, bool):
            params[param] = st.checkbox(param.replace("_", " "), key=widget_key, persist_state=KEEP)
        elif isinstance(default, float):
            params[param] = st.number_input(param.replace("_", " "), key=widget_key, persist_state=KEEP, format="%g")
        else:
            params[param] = st.number_input(param.replace("_", " "), key=widget_key, persist_state=KEEP, step=1)
    return params


def model_form(task_spec: engine.TaskSpec) -> dict:
    """The fields that mean something for the network picked and the task's shape, as the engine's
    field metadata says (engine.config.applies); the others take the configs' defaults
    (link.default_where_unused)."""
    s = "model"
    arch = st.selectbox("Network", MODEL_ARCHS, key=key(s, "arch"), persist_state=KEEP, format_func=ARCH_NAMES.get)
    if arch == "transformer":
        return {"arch": arch, **transformer_form(task_spec)}
    values = {"arch": arch}

    def shown(name: str) -> bool:
        return applies(MODEL_FIELDS[name], arch, task_spec.mapping in DECODERS)

    if shown("activation"):
        values["activation"] = st.selectbox("Activation", ACTIVATIONS, key=key(s, "activation"), persist_state=KEEP)
    values["hidden_size"] = st.number_input("Hidden units H", key=key(s, "hidden_size"), persist_state=KEEP, step=8)
    values["num_layers"] = st.number_input("Layers (stacked)", key=key(s, "num_layers"), persist_state=KEEP, step=1)
    values["bidirectional"] = st.checkbox("Bidirectional", key=key(s, "bidirectional"), persist_state=KEEP)
    if shown("peephole"):
        values["peephole"] = st.checkbox("Peephole connections", key=key(s, "peephole"), persist_state=KEEP,
                                         help="gates also see c_t (Gers & Schmidhuber 2000)")
    values["dropout"] = (  # between stacked layers: none to drop with one
        st.number_input("Dropout between layers", key=key(s, "dropout"), persist_state=KEEP, format="%g", step=0.1)
        if values["num_layers"] > 1 else 0.0
    )
    values["layer_norm"] = st.checkbox(
        "Layer normalisation", key=key(s, "layer_norm"), persist_state=KEEP,
        help="each gate's input and recurrent sums normalised per sample, with a gain and bias learnt "
             "(Ba, Kiros & Hinton 2016); trains on the written-out loop, slower than PyTorch's kernels",
    )
    values["zoneout"] = st.number_input(
        "Zoneout", key=key(s, "zoneout"), persist_state=KEEP, format="%g", step=0.05, min_value=0.0, max_value=0.9,
        help="while training, each unit keeps its previous value with this probability (Krueger et al. 2017); "
             "0 = off",
    )
    if task_spec.input_kind == "tokens":
        values["embedding_dim"] = st.number_input("Embedding size", key=key(s, "embedding_dim"), persist_state=KEEP,
                                                  step=8)
    values["init"] = st.selectbox("Recurrent weights start", INITS, key=key(s, "init"), persist_state=KEEP)
    values["spectral_radius"] = (  # the radius W_hh is scaled to: only a scaled start has one
        st.number_input("Spectral radius of W_hh", key=key(s, "spectral_radius"), persist_state=KEEP, format="%g",
                        step=0.1)
        if values["init"] == "scaled" else None
    )
    if shown("forget_bias"):
        values["forget_bias"] = optional_number(s, "forget_bias", "Forget-gate bias",
                                                "start the forget gate open: 1 to 3 are common")
    if shown("attention"):
        values |= attention_form()
    return values


def attention_form() -> dict:
    """A recurrent encoder-decoder's attention over the encoder's states (Schmidt's table of
    score functions), and whether the encoder reads the source backwards."""
    s = "model"
    score = st.selectbox("Attention (score function)", (NO_ATTENTION,) + SCORES, key=key(s, "attention"),
                         persist_state=KEEP, format_func=SCORE_NAMES.get,
                         help="how the decoder state s_t scores each encoder state h_i before the softmax; "
                         "none: the decoder sees only the encoder's final state (the bottleneck)")
    reverse = st.checkbox("Encoder reads the source backwards", key=key(s, "reverse_source"), persist_state=KEEP,
                          help="Sutskever et al. 2014: the first source tokens end next to the first target tokens")
    return {"attention": None if score == NO_ATTENTION else score, "reverse_source": reverse}


def transformer_form(task_spec: engine.TaskSpec) -> dict:
    """A transformer's width, heads, blocks and positions (Vaswani et al. 2017)."""
    s = "model"
    values = {
        "hidden_size": st.number_input("Model width d_model", key=key(s, "hidden_size"), persist_state=KEEP, step=8),
        "num_heads": st.number_input("Attention heads", key=key(s, "num_heads"), persist_state=KEEP, step=1,
                                     help="each head gets d_model / heads dimensions: heads must divide d_model"),
        "num_layers": st.number_input("Blocks per stack", key=key(s, "num_layers"), persist_state=KEEP, step=1),
        "dim_feedforward": st.number_input("Feed-forward width d_ff (0 = 4 × d_model)", key=key(s, "dim_feedforward"),
                                           persist_state=KEEP, step=16) or None,
        "position_encoding": st.radio("Positions", POSITION_ENCODINGS, key=key(s, "position_encoding"),
                                      persist_state=KEEP, horizontal=True,
                                      help="sinusoidal: fixed, PE(pos, 2i) = sin(pos / 10000^(2i/d)); "
                                      "learned: one trained vector per position; none: no position signal, "
                                      "so self-attention sees a bag of tokens"),
        "dropout": st.number_input("Dropout", key=key(s, "dropout"), persist_state=KEEP, format="%g", step=0.1),
        "attention_scale": st.checkbox("Divide the scores by √d_k", key=key(s, "attention_scale"), persist_state=KEEP,
                                       help="softmax(QKᵀ/√d_k): off, wide heads saturate the softmax and its "
                                       "gradient dies (the Self-attention page shows the entropy per query)"),
    }
    if task_spec.mapping != "encdec":  # an encoder-decoder's encoder always sees both sides, its decoder never
        values["bidirectional"] = st.checkbox(
            "Every position sees both sides (an encoder, BERT)", key=key(s, "bidirectional"), persist_state=KEEP,
            help="off: each position sees only itself and the past (a causal decoder, GPT)")
    return values


def scheduled_sampling_form() -> dict:
    """An encoder-decoder's scheduled sampling (Bengio et al. 2015)."""
    return {"scheduled_sampling": st.number_input(
        "Scheduled sampling: P(decoder reads its own guess)", key=key("train", "scheduled_sampling"),
        persist_state=KEEP, format="%g", step=0.1, min_value=0.0, max_value=1.0,
        help="0 = teacher forcing (the decoder always reads the true previous token in training)")}


def train_form(decodes: bool) -> dict:
    s = "train"
    return {
        "optimizer": st.selectbox("Optimizer", OPTIMIZERS, key=key(s, "optimizer"), persist_state=KEEP),
        "lr": st.number_input("Learning rate", key=key(s, "lr"), persist_state=KEEP, format="%g", step=1e-3),
        "batch_size": st.number_input("Batch size", key=key(s, "batch_size"), persist_state=KEEP, step=8),
        "clip_norm": optional_number(s, "clip_norm", "Clip gradient norm",
                                     "rescale the whole gradient to at most this norm"),
        "clip_value": optional_number(s, "clip_value", "Clip each gradient value", "clamp every entry to ±value"),
        **(scheduled_sampling_form() if decodes else {}),
        "bptt_window": st.number_input(
            "Truncated BPTT window (0 = full)", key=key(s, "bptt_window"), persist_state=KEEP, step=1,
            help="backpropagate through at most this many steps",
        ),
        "seed": st.number_input(
            "Seed", key=key(s, "seed"), persist_state=KEEP, step=1,
            help="a new model from this seed: its start, its batches and its probe and held-out samples",
        ),
    }


def read(current: Setup, task_spec: engine.TaskSpec, uploaded: bool = False) -> Setup:
    """Draw the form and return the setup it shows (`uploaded`: the lab trains on the student's own
    file). Raises ValueError for a refused value."""
    task_tab, model_tab, train_tab = st.tabs(["Task", "Model", "Training"])
    with task_tab:
        name = st.selectbox(
            "Task", OFFERED, key=key("task", "name"), persist_state=KEEP,
            format_func=lambda t: f"{t}: {engine.TASKS[t].help}",
        )
        if name != current.task:  # a new task starts from its own preset
            return preset_setup(name)
        params = task_params_form(current, uploaded)
    decodes = task_spec.mapping in DECODERS
    with model_tab:
        model_values = {**dataclasses.asdict(current.model), **model_form(task_spec)}
    with train_tab:
        train_values = {**dataclasses.asdict(current.train), **train_form(decodes)}
    default_where_unused(model_values, train_values, decodes)
    model = engine.ModelConfig(**model_values)
    train = engine.TrainConfig(**train_values)
    return Setup(name, model, train, {k: v for k, v in params.items() if k not in FILE_PARAMS})
