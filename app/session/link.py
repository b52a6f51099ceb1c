"""Setup: everything a link reproduces (task, model, training settings), and its URL form.

No Streamlit here: the page hands st.query_params in and writes the result back, so links can
be tested without a browser. A link holds every setting by name (`?task=adding&seq_len=50&
arch=lstm&lr=0.003...`); uploaded text or CSV files cannot travel in a link and never do.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, field

import engine
from engine.config import ARCHS

FILE_PARAMS = ("text", "csv_text")
# Settings of the engine's configs that no page of the app shows yet (attention models and
# transformers, scheduled sampling for decoders): in a link only when they differ from the preset.
NOT_IN_THE_FORM = ("attention", "reverse_source", "num_heads", "dim_feedforward", "position_encoding",
                   "scheduled_sampling")  # task parameters filled by an upload, never put in a link
SHARED = ("seed",)  # one seed for the task's data and the training run


@dataclass(frozen=True)
class Setup:
    task: str
    model: engine.ModelConfig
    train: engine.TrainConfig
    task_params: dict = field(default_factory=dict)  # as make_task takes them, without seed

    def __post_init__(self) -> None:
        # The engine builds transformers and attention models; no page opens them up yet, so the
        # app refuses them (from a link or an uploaded checkpoint) rather than draw them wrong.
        if not opens(self.model):
            what = "a transformer" if self.model.arch not in ARCHS else f"{self.model.attention} attention"
            raise ValueError(
                f"the app's pages open recurrent networks without attention so far, and this is {what}; "
                f"use arch {', '.join(ARCHS)} with no attention (the engine itself trains and records "
                "attention models and transformers from a notebook: see the README)"
            )

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
        """Every setting by name, but those no page lets a student set (attention, transformer
        heads, scheduled sampling...) while they hold the task preset's value: the link still
        reproduces the setup (parse_query fills them in), and says nothing the form does not show."""
        preset = preset_setup(self.task)
        query = {"task": self.task}
        query |= {k: format_value(v) for k, v in self.task_params.items()}
        for values, defaults in ((self.model.to_dict(), preset.model.to_dict()),
                                 (self.train.to_dict(), preset.train.to_dict())):
            query |= {k: format_value(v) for k, v in values.items() if k not in NOT_IN_THE_FORM or v != defaults[k]}
        return query


def opens(cfg: engine.ModelConfig) -> bool:
    """Whether the app's pages open a model of this config: recurrent, without attention, so far."""
    return cfg.arch in ARCHS and cfg.attention is None


# The tasks the app offers: those whose lesson preset its pages open (copy and dates teach
# attention, and join when a page shows it).
OFFERED = tuple(name for name, task in engine.TASKS.items() if opens(task.preset.model))


def preset_setup(task_name: str) -> Setup:
    """The task's own lesson preset, with its default parameters."""
    task_class = engine.TASKS[task_name]
    defaults = {k: v for k, v in engine.task_params(task_name).items() if k not in FILE_PARAMS + SHARED}
    return Setup(task_name, task_class.preset.model, task_class.preset.train, defaults)


DEFAULT = preset_setup("adding")


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
            raise ValueError(f"{name} must be true or false, got {text!r}")
        return text.lower() == "true"
    if kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            raise ValueError(f"{name} must be a {'whole number' if kind is int else 'number'}, got {text!r}") from None
    return text


def parse_query(query: dict[str, str]) -> Setup:
    """A link's query parameters as a Setup: missing fields take the task preset's values.
    Raises ValueError saying every problem found (unknown names, bad values)."""
    task_name = query.get("task", DEFAULT.task)
    if task_name not in OFFERED:
        raise ValueError(f"task={task_name!r} is not a task of this app; use one of {', '.join(OFFERED)}")
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
        if key == "task":
            continue
        section = next((s for s, (defaults, _) in sections.items() if key in defaults), None)
        if section is None:
            problems.append(f"{key} is not a setting of the {task_name} task, the model or the training")
            continue
        try:
            values[section][key] = parse_value(key, text, sections[section][1][key])
        except ValueError as err:
            problems.append(str(err))
    if problems:
        raise ValueError("; ".join(problems))
    setup = Setup(
        task_name,
        engine.ModelConfig(**values["model"]),
        engine.TrainConfig(**values["train"]),
        values["task"],
    )
    setup.make_task()  # the task's own checks (a lag out of range, say) speak now, not later
    return setup
