"""The kind of each argument of the engine's public calls, checked on the way in: a string given
for a model or None for a config says which argument to fix and what to pass, where it raised an
AttributeError or TypeError from deep inside the call."""
from __future__ import annotations

from torch import Tensor, nn

from .config import ModelConfig
from .losses import IGNORE
from .tasks.base import Task, TaskSpec

SHOWN = 80  # characters of a wrong argument's repr echoed: a tensor or a long text is cut


def shown(value) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:SHOWN]}{'...' if len(text) > SHOWN else ''}"


def check_kind(name: str, value, kind: type | tuple[type, ...], give: str) -> None:
    """TypeError naming the argument, what it was given and what to give instead."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be {give}, got {shown(value)}")


def check_model(model, name: str = "model") -> None:
    """A network made by engine.build_model or engine.load: an nn.Module with its config and task shape."""
    if not (isinstance(model, nn.Module) and isinstance(getattr(model, "cfg", None), ModelConfig)
            and isinstance(getattr(model, "spec", None), TaskSpec)):
        raise TypeError(f"{name} must be a network made by engine.build_model or engine.load, got {shown(model)}")


def check_task(task, name: str = "task") -> None:
    check_kind(name, task, Task, "a task made by engine.make_task, e.g. engine.make_task('adding')")


def check_tensor(name: str, value) -> None:
    check_kind(name, value, Tensor, "a torch.Tensor, e.g. from task.batch(32)")


def check_batch_shape(spec: TaskSpec, x, y) -> None:
    """x and y as task.batch draws them for a task of shape `spec`: ValueError naming the shape
    to give (a sample without its batch dimension, float token ids or another task's width)."""
    check_tensor("x", x)
    check_tensor("y", y)
    got = f"got {str(x.dtype).removeprefix('torch.')} of shape {list(x.shape)}; task.batch(n) draws one"
    if spec.input_kind == "tokens":
        wanted, fits = "[batch, steps] token ids (an integer tensor)", x.dim() == 2 and not x.is_floating_point()
    elif spec.mapping == "vec2seq":
        wanted = f"[batch, {spec.input_size}] float values"
        fits = x.dim() == 2 and x.shape[1] == spec.input_size and x.is_floating_point()
    else:
        wanted = f"[batch, steps, {spec.input_size}] float values"
        fits = x.dim() == 3 and x.shape[2] == spec.input_size and x.is_floating_point()
    if not fits:
        raise ValueError(f"x must be {wanted} for a model of the {spec.name} task, {got}")
    if len(x) == 0:
        raise ValueError("x has no samples: give at least one")
    if x.dim() > 1 and x.shape[1] == 0 and spec.mapping != "vec2seq":
        raise ValueError("x has no steps: give each sample at least one")
    if y.dim() == 0 or len(y) != len(x):
        raise ValueError(f"y must hold one target per sample of x ({len(x)}), got shape {list(y.shape)}")
    if spec.mapping == "seq2seq" and (y.dim() < 2 or y.shape[1] != x.shape[1]):
        raise ValueError(f"y must hold a target for each of x's {x.shape[1]} steps, got shape {list(y.shape)}")
    if spec.loss == "ce":
        classes = x.shape[1] + 2 if spec.mapping == "pointer" else spec.output_size  # a pointer's: <sos>, <eos>, inputs
        targets = y[y != IGNORE]  # a position with no target (padding) is scored by nothing
        if y.is_floating_point() or targets.numel() and not 0 <= int(targets.min()) <= int(targets.max()) < classes:
            raise ValueError(f"y must be class ids from 0 to {classes - 1} (an integer tensor; {IGNORE} for no "
                             f"target) for a model of the {spec.name} task, got {str(y.dtype).removeprefix('torch.')} "
                             "values outside them")
