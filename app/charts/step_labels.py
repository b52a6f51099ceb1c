"""What a sample reads and what the model answers at each time step, as short text for the
Unroll page's diagram and tables. No streamlit here."""
from __future__ import annotations

import torch

import engine
from app.charts.labels import visible

SOS_LABEL = "<sos>"
MARKDOWN_SPECIAL = set("\\`*_[]$~|")  # mid-sentence, only these format text


def literal(label: str) -> str:
    """A label as literal text in a markdown sentence, where `*`, `_`, `$` and the like would
    format it."""
    return "".join("\\" + ch if ch in MARKDOWN_SPECIAL else ch for ch in label)


def values_label(values: torch.Tensor) -> str:
    """One step's input values, e.g. "0.42" or "0.42, 1"."""
    return ", ".join(f"{v:.3g}" for v in values.reshape(-1).tolist())


def input_symbols(task: engine.Task, rec: engine.Recording, stack: str | None,
                  symbols: list[str] | None) -> list[str] | None:
    """What the stack reads at each step as the task's own symbols (not yet escaped for
    plotly), or None where it reads values: the encoder (or only stack) reads the sample's
    `symbols`; a decoder reads <sos> and then the true previous target token (teacher forcing,
    as recorded)."""
    if stack == "decoder":
        target = [task.target_vocab[i] for i in rec.y.tolist()]  # [T_out]
        return [SOS_LABEL, *target[:-1]]
    return symbols


def input_labels(task: engine.Task, rec: engine.Recording, stack: str | None,
                 symbols: list[str] | None) -> list[str]:
    """One label per step of the stack as plotly text: its input_symbols, or its values; a
    vector-to-sequence model reads its one input vector again at every step."""
    if task.spec.mapping == "vec2seq":
        return [values_label(rec.x)] * task.steps_of(rec.x)
    read = input_symbols(task, rec, stack, symbols)
    if read is not None:
        return [visible(s) for s in read]
    return [values_label(v) for v in rec.x.reshape(len(rec.x), -1)]


def answer(task: engine.Task, y_hat: torch.Tensor) -> str:
    """One output as text: a value, or the most likely class with its probability."""
    if task.spec.loss == "mse":
        return values_label(y_hat)
    p = torch.softmax(y_hat.double(), dim=-1)  # [classes]
    best = int(p.argmax())
    names = task.class_names
    name = visible(names[best]) if names is not None else f"class {best}"
    return f"{name} ({p[best]:.0%})"


def output_labels(task: engine.Task, rec: engine.Recording, stack: str | None) -> list[str]:
    """One label per step of the stack; "" where the model gives no output at that step (a
    seq2vec model answers after its last step only, an encoder never)."""
    T = rec.stacks[stack].hidden.shape[2] if stack else rec.seq_len
    mapping = task.spec.mapping
    if stack == "encoder":
        return [""] * T
    if mapping == "seq2vec":
        return [""] * (T - 1) + [answer(task, rec.y_hat)]
    return [answer(task, rec.y_hat[t]) for t in range(T)]  # y_hat: [T, outputs]
