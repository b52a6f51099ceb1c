"""build_model: the network a ModelConfig describes, in the shape a task needs."""
from __future__ import annotations

from torch import nn

from .config import ModelConfig
from .model import SequenceModel
from .rng import GLOBAL_RNG_LOCK, PrivateRNG
from .seq2seq import EncoderDecoder
from .tasks.base import TaskSpec


def build_model(cfg: ModelConfig, task, seed: int | None = None) -> nn.Module:
    """A SequenceModel, or an EncoderDecoder for an encdec task. `task` is a Task or a TaskSpec.
    With a seed, the initial weights are the same every time (and torch's global generator is
    left as it was); without one, they come from torch's global generator."""
    spec = task if isinstance(task, TaskSpec) else getattr(task, "spec", None)
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"build_model needs a task (engine.make_task(...)) or its TaskSpec, got {task!r}")
    kind = EncoderDecoder if spec.mapping == "encdec" else SequenceModel
    if seed is None:
        with GLOBAL_RNG_LOCK:  # draws from the global generator, but never mid-way through a seeded run
            return kind(cfg, spec)
    with PrivateRNG(seed).active():
        return kind(cfg, spec)
