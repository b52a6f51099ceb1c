"""A checkpoint's header read as data a stranger may have forged: every field is type-checked
against the dataclass that declares it before the dataclass's own checks see it, so a list, a
dict, a number too big for a float or a null where none belongs gets a ValueError naming the
field, never a TypeError (or worse) further in."""
from __future__ import annotations

import json
import math
import types
import typing

from .config import ModelConfig
from .tasks.base import DECODERS, TaskSpec

MAX_TOKEN_CHARS = 1000  # one vocabulary entry: a word, a character, a symbol's name


def read_header(metadata: dict) -> tuple[ModelConfig, TaskSpec, tuple[str, ...] | None]:
    """(ModelConfig, TaskSpec, vocabulary or None) from an Unrolled checkpoint's metadata."""
    cfg = ModelConfig.from_dict(typed_fields(ModelConfig, decoded(metadata, "model_config"), "model config"))
    data = typed_fields(TaskSpec, decoded(metadata, "task_spec"), "task spec")
    missing = [f for f in ("name", "mapping", "input_kind", "input_size", "output_size", "loss") if f not in data]
    if missing:
        raise ValueError(
            f"this checkpoint's task spec has no {', '.join(missing)}; its config is damaged, save it again"
        )
    unknown = set(data) - set(typing.get_type_hints(TaskSpec))
    if unknown:
        raise ValueError(f"this checkpoint's task spec has unknown fields {sorted(unknown)}; save it again")
    spec = TaskSpec(**data)
    if spec.mapping not in ("vec2seq", *DECODERS) and spec.out_len != 0:
        # TaskSpec checks out_len only where it is used; here a forged one must not ride along.
        raise ValueError(
            f"out_len applies to vec2seq, encdec and pointer tasks; this {spec.mapping} checkpoint has {spec.out_len}"
        )
    return cfg, spec, read_vocab(metadata, spec)


def decoded(metadata: dict, key: str) -> dict:
    text = metadata.get(key)
    if not isinstance(text, str):
        raise ValueError(f"this checkpoint's {key} is missing or not text; its config is damaged, save it again")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:  # RecursionError: forged [[[[...]]]]
        raise ValueError(f"this checkpoint's config is damaged ({type(err).__name__}); save it again") from None
    if not isinstance(data, dict):
        raise ValueError(f"this checkpoint's {key} is {type(data).__name__}, not a JSON object; its config is damaged")
    return data


def typed_fields(cls, data: dict, what: str) -> dict:
    """`data`, once every field `cls` declares holds a value of the declared type. Unknown fields
    pass through: the config's from_dict names them."""
    hints = typing.get_type_hints(cls)
    for name, value in data.items():
        if name in hints and not fits(value, hints[name]):
            raise ValueError(
                f"this checkpoint's {what} field {name} must be {type_name(hints[name])}, got {short(value)}; "
                "the file is damaged or was not written by Unrolled"
            )
    return data


def fits(value, hint) -> bool:
    if isinstance(hint, types.UnionType):
        return any(fits(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        try:  # an integer beyond a float's range would raise OverflowError in the range checks
            return math.isfinite(float(value))
        except OverflowError:
            return False
    return isinstance(value, hint)


def type_name(hint) -> str:
    if isinstance(hint, types.UnionType):
        return " or ".join(type_name(arm) for arm in typing.get_args(hint))
    return {type(None): "null", bool: "true or false", int: "a whole number", float: "a finite number",
            str: "text"}.get(hint, getattr(hint, "__name__", str(hint)))


def short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def read_vocab(metadata: dict, spec: TaskSpec, key: str = "vocab") -> tuple[str, ...] | None:
    """The vocabulary the model was trained with: one text per input id, or None (a checkpoint
    saved before vocabularies travelled, or a task whose inputs are values without names). With
    key="target_vocab", its output vocabulary where it has one of its own (a translator's French
    words): one text per output class."""
    size, what = (spec.output_size, "output classes") if key == "target_vocab" else (spec.input_size, "input ids")
    text = metadata.get(key)
    if text is None:
        return None
    try:
        vocab = json.loads(text) if isinstance(text, str) else text
    except (json.JSONDecodeError, RecursionError):
        raise ValueError("this checkpoint's vocabulary is damaged (not JSON); save it again") from None
    if vocab is None:
        return None
    if not isinstance(vocab, list) or not all(isinstance(t, str) and len(t) <= MAX_TOKEN_CHARS for t in vocab):
        raise ValueError(f"this checkpoint's vocabulary must be a list of texts, got {short(vocab)}; save it again")
    if len(vocab) != size:
        raise ValueError(f"this checkpoint's vocabulary has {len(vocab)} entries for {size} {what}; save it again")
    return tuple(vocab)
