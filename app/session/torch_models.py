"""A PyTorch model opened into the lab. A plain state_dict has no Unrolled task, and the look-inside
pages need one (its samples, its loss, its symbols), so the student picks one of the app's tasks
whose shape the network fits: what it gives the network to read, how many outputs it needs, and
where it reads them. The lab then installs it through Lab.install, as every model enters it."""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import engine
from app.session.budget import check_cost
from app.session.lab import Lab
from app.session.link import OFFERED, preset_setup
from engine.torch_import import Recognised, open_state_dict, reads, recognise
from engine.vocab import vocab_mismatch

# Where a task's outputs come from, in the words of the fit table.
OUTPUTS_AT = {
    "seq2vec": "after the last step",
    "seq2seq": "per step",
    "vec2seq": "per step, from one input vector",
    "encdec": "per step, from a decoder (an encoder-decoder)",
    "pointer": "per step, from a decoder pointing at the input (a pointer network)",
}


@dataclass(frozen=True)
class Fit:
    """One of the app's tasks, as the fit table shows it."""

    task: str
    reads: str  # what the task gives a network to read: "2 values per step", "token ids 0-157"
    needs: str  # the outputs it needs: "1 output after the last step"
    problem: str | None  # why this network cannot run on it, or None: it fits


@functools.cache
def preset_shape(task: str) -> tuple[engine.TaskSpec, tuple[str, ...] | None]:
    """A task's spec and vocabulary with its default parameters (immutable: shared by every session)."""
    made = preset_setup(task).make_task()
    return made.spec, made.vocab


def shape_in(lab: Lab, task: str) -> tuple[engine.TaskSpec, tuple[str, ...] | None]:
    """A task's spec and vocabulary as it would run here: the lab's own task as set (its
    parameters, its uploaded corpus), any other with its defaults, as Lab.load_model takes them."""
    return (lab.task.spec, lab.task.vocab) if task == lab.setup.task else preset_shape(task)


def fits(lab: Lab, found: Recognised, mapping: str, vocab: tuple[str, ...] | None) -> list[Fit]:
    """Every task of the app, and whether this network, its head reading as `mapping`, runs on it."""
    rows = []
    for task in OFFERED:
        spec, task_vocab = shape_in(lab, task)
        problem = found.misfit(spec, mapping)
        if problem is None and spec.input_kind == "tokens":
            problem = vocab_mismatch(vocab, task_vocab)
        outputs = f"{spec.output_size} output{'s' if spec.output_size > 1 else ''} {OUTPUTS_AT[spec.mapping]}"
        rows.append(Fit(task, reads(spec.input_kind, spec.input_size), outputs, problem))
    return rows


def open_on(lab: Lab, data: bytes, task: str, mapping: str, *, activation: str = "tanh",
            vocab: tuple[str, ...] | None = None) -> Recognised:
    """Make the state_dict in `data` the lab's model, on `task` (the lab's own task as set, or
    another with its defaults). Raises ValueError, leaving the lab as it was, when the file is
    refused, the network does not fit the task, or it is over the lab's size budget."""
    setup = lab.setup if task == lab.setup.task else preset_setup(task)
    upload = lab.upload if setup is lab.setup else None
    on = lab.task_for(setup, upload)
    # Priced from the file's header (its tensors' names and shapes), before a tensor is read or a
    # model built: a 2 x 1024 LSTM's state_dict was read and built (72 MB) before the Lab refused it.
    check_cost(dataclasses.replace(setup, model=recognise(data).config(activation)), on)
    found, model = open_state_dict(data, mapping, activation=activation, vocab=vocab, task=on)
    lab.install(dataclasses.replace(setup, model=model.cfg), upload, model)
    return found
