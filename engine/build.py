"""build_model: the network a ModelConfig describes, in the shape a task needs."""
from __future__ import annotations

from torch import nn

from .attention_seq2seq import AttentionEncoderDecoder
from .config import ModelConfig
from .model import SequenceModel
from .rng import GLOBAL_RNG_LOCK, PrivateRNG
from .seq2seq import EncoderDecoder
from .tasks.base import TaskSpec
from .transformer import TransformerModel
from .transformer_seq2seq import TransformerEncoderDecoder


def model_class(cfg: ModelConfig, spec: TaskSpec) -> type[nn.Module]:
    """The network for this config and task shape, or a ValueError naming the field to change."""
    encdec = spec.mapping == "encdec"
    if not encdec and (cfg.attention is not None or cfg.reverse_source):
        field = "attention" if cfg.attention is not None else "reverse_source"
        raise ValueError(
            f"{field} belongs to an encoder-decoder, and this {spec.name} task is {spec.mapping}; "
            f"leave {field} at {None if field == 'attention' else False} (or pick an encdec task, e.g. reverse)"
        )
    if cfg.arch == "transformer":
        if cfg.reverse_source:
            raise ValueError(
                "reversing the source shortens a recurrent encoder's path from the first source "
                "token to the first target token; a transformer has no such path. Set reverse_source=False"
            )
        return TransformerEncoderDecoder if encdec else TransformerModel
    if encdec:
        return AttentionEncoderDecoder if cfg.attention is not None else EncoderDecoder
    return SequenceModel


def build_model(cfg: ModelConfig, task, seed: int | None = None) -> nn.Module:
    """A SequenceModel, or an EncoderDecoder for an encdec task (an AttentionEncoderDecoder with
    cfg.attention); a TransformerModel or TransformerEncoderDecoder for arch="transformer".
    `task` is a Task or a TaskSpec.
    With a seed, the initial weights are the same every time (and torch's global generator is
    left as it was); without one, they come from torch's global generator."""
    spec = task if isinstance(task, TaskSpec) else getattr(task, "spec", None)
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"build_model needs a task (engine.make_task(...)) or its TaskSpec, got {task!r}")
    kind = model_class(cfg, spec)
    if seed is None:
        with GLOBAL_RNG_LOCK:  # draws from the global generator, but never mid-way through a seeded run
            return kind(cfg, spec)
    with PrivateRNG(seed).active():
        return kind(cfg, spec)
