"""A model's vocabulary against a task's: the same sizes are not the same words. A sentiment
model trained on one CSV reads another CSV's ids as other words and scores at chance, silently,
so a mismatch is refused and named."""
from __future__ import annotations

from torch import nn


def vocab_mismatch(model_vocab: tuple[str, ...] | None, task_vocab: tuple[str, ...] | None) -> str | None:
    """Why a model trained with `model_vocab` cannot read a task's ids, or None if it can. A model
    without a vocabulary (an old checkpoint, one built from a TaskSpec) is taken on trust."""
    if model_vocab is None or tuple(model_vocab) == tuple(task_vocab or ()):
        return None
    if task_vocab is None:
        return (
            f"this model was trained with a vocabulary of {len(model_vocab)} tokens and this task has none; "
            "load it with the data it was trained on"
        )
    size = max(len(model_vocab), len(task_vocab))
    differ = [i for i in range(size) if token(model_vocab, i) != token(task_vocab, i)]
    first = differ[0]
    return (
        f"{len(differ)} of {size} token ids mean other tokens: id {first} is {token(model_vocab, first)!r} in "
        f"the model, {token(task_vocab, first)!r} in this task; load it with the data it was trained on"
    )


def token(vocab: tuple[str, ...], i: int) -> str | None:
    return vocab[i] if i < len(vocab) else None


def check_vocab(model: nn.Module, task) -> None:
    """ValueError unless the model reads the task's token ids as the words it was trained on."""
    # getattr: models built before build_model set `vocab` have none.
    problem = vocab_mismatch(getattr(model, "vocab", None), task.vocab)
    # and writes the task's output ids as the words it was trained on, where they are a vocabulary of their own
    problem = problem or vocab_mismatch(getattr(model, "target_vocab", None), getattr(task, "target_vocab", None))
    if problem:
        raise ValueError(problem)
