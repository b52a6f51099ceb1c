"""build_model: the network a ModelConfig describes, in the shape a task needs."""
from __future__ import annotations

import torch
from torch import nn

from .config import ModelConfig
from .model import SequenceModel
from .seq2seq import EncoderDecoder
from .tasks.base import TaskSpec


def build_model(cfg: ModelConfig, task, seed: int | None = None) -> nn.Module:
    """A SequenceModel, or an EncoderDecoder for an encdec task. `task` is a Task or a TaskSpec.
    With a seed, the initial weights are the same every time (and torch's global generator is
    left as it was)."""
    spec = task if isinstance(task, TaskSpec) else task.spec
    kind = EncoderDecoder if spec.mapping == "encdec" else SequenceModel
    if seed is None:
        return kind(cfg, spec)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return kind(cfg, spec)
