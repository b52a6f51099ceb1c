"""Open your own model: a PyTorch state_dict saved with safetensors (or a model saved by Unrolled).

Its shapes say what the network is, and the widget shows what they said; it asks only what shapes
cannot say (an RNN's activation, where the head reads, the vocabulary of an embedding), then lists
the app's tasks with whether the network fits each and why not. A refused file leaves the lab's
model as it was.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.session.lab import Lab
from app.session.torch_models import fits, open_on
from app.widgets import state
from app.widgets.literal import literal
from engine import torch_import
from engine.torch_import import MAX_BYTES, Recognised

FILE, VOCAB, ACTIVATION = state.TORCH_FILE, state.TORCH_VOCAB, state.TORCH_ACTIVATION
MAPPING, TASK, OPEN = state.TORCH_MAPPING, state.TORCH_TASK, state.TORCH_OPEN

HEAD_READS = {"seq2seq": "every step (seq2seq)", "seq2vec": "the last step (seq2vec)"}
HOW_TO_SAVE = (
    "A network made of an optional `nn.Embedding`, one `nn.RNN`, `nn.LSTM` or `nn.GRU` (any layers, "
    "bidirectional or not) and an optional `nn.Linear` head. Save its weights with "
    "`from safetensors.torch import save_file; save_file(model.state_dict(), 'model.safetensors')`: "
    "a `torch.save` file is a pickle, which could run any code when opened, so it is refused unread."
)


def torch_upload(lab: Lab) -> None:
    """The uploader, what the file was recognised as, the questions, the tasks it fits and the
    button that opens it. Goes inside Build & Train's "Save or load the model"."""
    if (what := st.session_state.pop(state.OPENED, None)) is not None:  # opened by the run before this one
        st.toast(what, icon=":material/check:")
    file = st.file_uploader(
        "Open your own model (.safetensors: a PyTorch state_dict, or a model saved by Unrolled)", key=FILE,
        max_upload_size=MAX_BYTES // 2**20,
    )
    if file is None:
        st.caption(HOW_TO_SAVE)
        return
    data = file.getvalue()
    try:
        found = None if torch_import.saved_by_unrolled(data) else torch_import.recognise(data)
    except ValueError as err:
        refused(file.name, err)
        return
    if found is None:
        unrolled_checkpoint(lab, file.name, data)
        return
    st.markdown(f"**{literal(file.name)}** holds\n" + "\n".join(f"- {line}" for line in found.lines()))
    mapping = st.radio("Its head reads", tuple(HEAD_READS), format_func=HEAD_READS.get, key=MAPPING, horizontal=True,
                       help="seq2vec with a bidirectional network: the forward state after the last step beside the "
                            "backward one after the first, torch.cat((h_n[-2], h_n[-1]), dim=1) in PyTorch")
    activation = (st.radio("Its nonlinearity (nn.RNN's)", ("tanh", "relu"), key=ACTIVATION, horizontal=True)
                  if found.arch == "rnn" else "tanh")
    vocab = vocabulary(found)
    if found.embedding is not None and vocab is None:
        return
    rows = fits(lab, found, mapping, vocab)
    st.dataframe(pd.DataFrame({
        "task": [r.task for r in rows],
        "fits": ["yes" if r.problem is None else "no" for r in rows],
        "gives the network": [r.reads for r in rows],
        "needs": [r.needs for r in rows],
        "why not": [r.problem or "" for r in rows],
    }), hide_index=True)
    fitting = [r.task for r in rows if r.problem is None]
    if not fitting:
        st.warning(
            f"No task of this app fits this network, which reads {found.reads()} and gives {found.output_size} "
            "outputs. The table says what each task gives and needs: save a network shaped for one of them.",
            icon=":material/block:",
        )
        return
    task = st.selectbox("Run it on the task", fitting, key=TASK)
    if st.button(f"Open it on {task}", key=OPEN, icon=":material/upload_file:"):
        try:
            open_on(lab, data, task, mapping, activation=activation, vocab=vocab)
        except ValueError as err:
            refused(file.name, err)
            return
        opened(f"{literal(file.name)} opened on {task}")
    st.caption(
        "Opening it replaces the model you have with the file's weights, on that task: every page then opens "
        "it up, and training goes on from them."
    )


def vocabulary(found: Recognised) -> tuple[str, ...] | None:
    """For a network with an embedding: the token of every id, from a file the student uploads."""
    if found.embedding is None:
        return None
    file = st.file_uploader(
        "Its vocabulary (.txt): one token per line, line 1 being id 0; write a line break as \\n, a tab as \\t "
        "and a backslash as \\\\", key=VOCAB,
    )
    if file is None:
        st.info(f"Shapes cannot say which token each of the {found.vocab_size} ids stands for: upload the "
                "vocabulary the model was trained with.", icon=":material/help:")
        return None
    try:
        vocab = torch_import.read_vocab(file.getvalue())
        torch_import.check_vocab_size(found, vocab)
    except ValueError as err:
        st.error(f"{literal(file.name)}: {literal(err)}", icon=":material/block:")
        return None
    return vocab


def unrolled_checkpoint(lab: Lab, name: str, data: bytes) -> None:
    """A model saved by Unrolled carries its task: it opens as Lab.load_model opens it."""
    st.markdown(f"**{literal(name)}** is a model saved by Unrolled: its config, task and vocabulary travel with it.")
    if st.button("Open it", key=OPEN, icon=":material/upload_file:"):
        try:
            lab.load_model(data)
        except ValueError as err:
            refused(name, err)
            return
        opened(f"{literal(name)} opened on {lab.setup.task}")


def refused(name: str, err: ValueError) -> None:
    st.error(f"{literal(name)}: {literal(err)}. The model you had is unchanged.", icon=":material/block:")


def opened(what: str) -> None:
    """A new model: the lesson's text no longer applies, and the whole page draws it, saying so (a
    toast made before st.rerun() never reached the browser: Streamlit issue #7740)."""
    st.session_state.pop(state.LESSON, None)
    st.session_state[state.OPENED] = what
    st.rerun()
