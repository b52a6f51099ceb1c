"""Tasks by name: `make_task("adding", seq_len=50, seed=0)`.

TASKS holds every task; ATTENTION_TASKS names those that teach attention (copy, dates, sort,
whose pointer network's output is an attention, and translate). Which
tasks the app offers is the app's choice (app/session/link.py)."""
from __future__ import annotations

import inspect

from .adding import AddingTask
from .base import Preset, Task, TaskSpec
from .char_sentiment import CharSentimentTask
from .charlm import CharLMTask
from .copy import CopyTask
from .dates import DatesTask
from .masked_lm import MaskedLMTask, WordLMTask
from .parity import ParityTask
from .recall import RecallTask
from .reverse import ReverseTask
from .review_csv import ParsedReviews, parse_reviews
from .sentiment import SentimentTask
from .sine import SineTask
from .sort import SortTask
from .translate import TranslateTask

ATTENTION_TASKS: dict[str, type[Task]] = {
    "copy": CopyTask,
    "dates": DatesTask,
    "sort": SortTask,
    "translate": TranslateTask,
}
TASKS: dict[str, type[Task]] = {
    "adding": AddingTask,
    "recall": RecallTask,
    "parity": ParityTask,
    "sine": SineTask,
    "charlm": CharLMTask,
    "sentiment": SentimentTask,
    "char_sentiment": CharSentimentTask,
    "reverse": ReverseTask,
    "masked_lm": MaskedLMTask,
    "word_lm": WordLMTask,
    **ATTENTION_TASKS,
}


def task_params(name: str) -> dict:
    """The parameters a task takes, with their defaults."""
    if not isinstance(name, str) or name not in TASKS:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}")
    signature = inspect.signature(TASKS[name])
    return {p.name: p.default for p in signature.parameters.values()}


def make_task(name: str, **params) -> Task:
    unknown = set(params) - set(task_params(name))
    if unknown:
        raise ValueError(
            f"task {name!r} has no parameter {', '.join(sorted(unknown))}; "
            f"it takes {', '.join(task_params(name))}"
        )
    return TASKS[name](**params)


def header_task(name: str, spec: TaskSpec, vocab: tuple[str, ...], target_vocab: tuple[str, ...] | None = None,
                **params) -> Task:
    """make_task's task as a checkpoint's header knows it, for a model of a task whose public corpus is not
    on this machine: it reads and writes the header's words at once, and reads its corpus when first asked
    for a batch or its held-out split (engine.datasets.CorpusMissing until the corpus is here). Task.from_header."""
    if name not in TASKS or spec.name != name:
        raise ValueError(f"this checkpoint is a model of the {spec.name} task, not of {name!r}")
    return TASKS[name].from_header(spec, vocab, target_vocab, **params)


__all__ = ["TASKS", "ATTENTION_TASKS", "Preset", "Task", "TaskSpec", "make_task", "header_task", "task_params",
           "ParsedReviews", "parse_reviews"]
