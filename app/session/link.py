"""Setup: everything a link reproduces (task, model, training settings), and its URL form.

No Streamlit here: the page hands st.query_params in and writes the result back, so links can
be tested without a browser. A link holds every setting by name (`?task=adding&seq_len=50&
arch=lstm&lr=0.003...`); uploaded text or CSV files cannot travel in a link and never do.
"""
from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field

import engine
from engine import datasets
from engine.config import applies

FILE_PARAMS = ("text", "csv_text")  # task parameters filled by an upload, never put in a link
SHARED = ("seed",)  # one seed for the task's data and the training run
# A page's own settings, not the Lab's: the page reads them from the link (the Embeddings page's
# word2vec, app/session/embeddings.py), and parse_query leaves them to it.
EMBEDDING_PARAMS = {"dim": "w2v_dim", "window": "w2v_window", "negatives": "w2v_negatives", "words": "w2v_words",
                    "pick": "w2v_pick", "projection": "w2v_map"}
PAGE_PARAMS = frozenset(EMBEDDING_PARAMS.values())


@dataclass(frozen=True)
class Setup:
    task: str
    model: engine.ModelConfig
    train: engine.TrainConfig
    task_params: dict = field(default_factory=dict)  # as make_task takes them, without seed

    def make_task(self, upload: str | bytes | None = None) -> engine.Task:
        params = dict(self.task_params)
        if upload is not None and self.upload_param:
            params[self.upload_param] = upload
        return engine.make_task(self.task, seed=self.train.seed, **params)

    @property
    def upload_param(self) -> str | None:
        """The task parameter an upload fills ("text" for charlm, "csv_text" for sentiment)."""
        return next((p for p in FILE_PARAMS if p in engine.task_params(self.task)), None)

    def to_query(self) -> dict[str, str]:
        """Every setting that means something for this model, by name: a recurrent network's link
        leaves out a transformer's heads and positions, a transformer's the cell's activation and
        initialisation, a one-stack task's the decoder's settings (parse_query fills them in from
        the preset), so a link says nothing the form does not show."""
        query = {"task": self.task}
        query |= {k: format_value(v) for k, v in self.task_params.items()}
        unused = unused_fields(self.model, self.decodes)
        for values in (self.model.to_dict(), self.train.to_dict()):
            query |= {k: format_value(v) for k, v in values.items() if k not in unused}
        return query

    @property
    def decodes(self) -> bool:
        """Whether the task's model has a decoder (an encoder-decoder's or a pointer network's
        task): the task says so without being built."""
        return engine.TASKS[self.task].decodes


def unused_fields(model: engine.ModelConfig | dict, decodes: bool) -> set[str]:
    """The settings of a model (a config, or its fields as a dict) that mean nothing for it: what
    each config field applies to is the engine's (its metadata, engine.config.applies)."""
    arch = model["arch"] if isinstance(model, dict) else model.arch
    return {f.name for f in CONFIG_FIELDS if not applies(f, arch, decodes)}


CONFIG_FIELDS = (*dataclasses.fields(engine.ModelConfig), *dataclasses.fields(engine.TrainConfig))
DEFAULTS = {f.name: f.default for f in CONFIG_FIELDS}


def default_where_unused(model: dict, train: dict, decodes: bool, given: Iterable[str] = ()) -> None:
    """Set the settings that mean nothing for this model (a transformer's cell activation, a cell's
    heads, a one-stack task's decoder settings) to the configs' defaults, in place, but those
    `given` by name (a link that names one gets the config's own message if it cannot be)."""
    for name in unused_fields(model, decodes) - set(given):
        (model if name in model else train)[name] = DEFAULTS[name]


# The tasks the app offers: every task of the engine.
OFFERED = tuple(engine.TASKS)


def preset_setup(task_name: str) -> Setup:
    """The task's own lesson preset, with its default parameters."""
    task_class = engine.TASKS[task_name]
    defaults = {k: v for k, v in engine.task_params(task_name).items() if k not in FILE_PARAMS + SHARED}
    return Setup(task_name, task_class.preset.model, task_class.preset.train, defaults)


DEFAULT = preset_setup("adding")


ECHOED = 60  # characters of a key or value a message repeats: a 100 KB one would push the reason out of sight


def echo(text: str) -> str:
    """A key or value as a message repeats it: quoted, and cut when long, saying how long it was."""
    return repr(text) if len(text) <= ECHOED else f"{text[:ECHOED]!r}... ({len(text):,} characters)"


def check_given_once(values: dict[str, list[str]]) -> None:
    """ValueError naming every setting a link gives more than once (?seed=1&seed=2), which of
    its values was meant no one can tell."""
    repeated = [f"{echo(key)} is given {len(given)} times ({', '.join(echo(v) for v in given[:3])})"
                for key, given in values.items() if len(given) > 1]
    if repeated:
        raise ValueError("; ".join(repeated) + ": give each setting once")


def format_value(value) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def parse_value(name: str, text: str, hint):
    """A query-string value as the field's type, or a ValueError naming the field."""
    optional = type(None) in typing.get_args(hint)
    kinds = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
    if optional and text.lower() == "none":
        return None
    kind = kinds[0]
    if kind is bool:
        if text.lower() not in ("true", "false"):
            raise ValueError(f"{name} must be true or false, got {echo(text)}")
        return text.lower() == "true"
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            what = "whole number" if kind is int else "number"
            raise ValueError(f"{name} must be a {what}, got {echo(text)}") from None
    return text


MAX_TARGET_STEPS = 1_000_000  # "Train up to step" at most, in the box and in a link


def parse_target_steps(text: str) -> int:
    """A link's step target ("Train up to step": ?steps=300), or a ValueError naming it, as a
    setting's bad value gets."""
    steps = parse_value("steps", text, int)
    if not 1 <= steps <= MAX_TARGET_STEPS:
        raise ValueError(f"steps must be between 1 and {MAX_TARGET_STEPS}, got {steps}")
    return steps


def parse_query(query: dict[str, str]) -> Setup:
    """A link's query parameters as a Setup: missing fields take the task preset's values.
    Raises ValueError saying every problem found (unknown names, bad values)."""
    task_name = query.get("task", DEFAULT.task)
    if task_name not in OFFERED:
        raise ValueError(f"task={echo(task_name)} is not a task of this app; use one of {', '.join(OFFERED)}")
    base = preset_setup(task_name)
    task_hints = typing.get_type_hints(engine.TASKS[task_name])
    sections = {
        "task": (base.task_params, {k: task_hints[k] for k in base.task_params}),
        "model": (base.model.to_dict(), typing.get_type_hints(engine.ModelConfig)),
        "train": (base.train.to_dict(), typing.get_type_hints(engine.TrainConfig)),
    }
    values = {name: dict(defaults) for name, (defaults, _) in sections.items()}
    problems = []
    for key, text in query.items():
        if key == "task" or key in PAGE_PARAMS:
            continue
        section = next((s for s, (defaults, _) in sections.items() if key in defaults), None)
        if section is None:
            shown = key if len(key) <= ECHOED else echo(key)  # a short key reads as typed
            problems.append(f"{shown} is not a setting of the {task_name} task, the model or the training")
            continue
        try:
            values[section][key] = parse_value(key, text, sections[section][1][key])
        except ValueError as err:
            problems.append(str(err))
    if problems:
        raise ValueError("; ".join(problems))
    default_where_unused(values["model"], values["train"], engine.TASKS[task_name].decodes, given=query)
    setup = Setup(
        task_name,
        engine.ModelConfig(**values["model"]),
        engine.TrainConfig(**values["train"]),
        values["task"],
    )
    try:
        setup.make_task()  # the task's own checks (a lag out of range, say) speak now, not later
    except datasets.CorpusMissing:
        # A link to a task on a corpus this machine lacks is still a link: the lessons read theirs when the
        # app starts, and a page says what to download when it builds the task. Its checks speak then.
        pass
    return setup
