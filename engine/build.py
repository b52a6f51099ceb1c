"""build_model: the network a ModelConfig describes, in the shape a task needs.

The class comes from MODELS, keyed by (family, shape): a new model is one entry there and a class
that meets engine.contract.Model, not another branch here.
"""
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

# (family, shape) -> class. family: "recurrent" or "transformer"; shape: "one stack" (seq2vec,
# seq2seq, vec2seq), "encoder-decoder", or "encoder-decoder with attention" (recurrent only:
# a transformer's decoder always attends).
MODELS: dict[tuple[str, str], type[nn.Module]] = {
    ("recurrent", "one stack"): SequenceModel,
    ("recurrent", "encoder-decoder"): EncoderDecoder,
    ("recurrent", "encoder-decoder with attention"): AttentionEncoderDecoder,
    ("transformer", "one stack"): TransformerModel,
    ("transformer", "encoder-decoder"): TransformerEncoderDecoder,
}


def check_fields(cfg: ModelConfig, spec: TaskSpec) -> None:
    """ValueError naming the field to change when a field of cfg does not fit this task's shape."""
    if spec.mapping != "encdec" and (cfg.attention is not None or cfg.reverse_source):
        field = "attention" if cfg.attention is not None else "reverse_source"
        raise ValueError(
            f"{field} belongs to an encoder-decoder, and this {spec.name} task is {spec.mapping}; "
            f"leave {field} at {None if field == 'attention' else False} (or pick an encdec task, e.g. reverse)"
        )
    if cfg.arch == "transformer" and cfg.reverse_source:
        raise ValueError(
            "reversing the source shortens a recurrent encoder's path from the first source "
            "token to the first target token; a transformer has no such path. Set reverse_source=False"
        )


def model_key(cfg: ModelConfig, spec: TaskSpec) -> tuple[str, str]:
    """The MODELS key of this config and task shape."""
    family = "transformer" if cfg.arch == "transformer" else "recurrent"
    if spec.mapping != "encdec":
        return family, "one stack"
    attends = cfg.attention is not None and family == "recurrent"
    return family, "encoder-decoder with attention" if attends else "encoder-decoder"


def model_class(cfg: ModelConfig, spec: TaskSpec) -> type[nn.Module]:
    """The network for this config and task shape, or a ValueError naming the field to change."""
    check_fields(cfg, spec)
    return MODELS[model_key(cfg, spec)]


def build_model(cfg: ModelConfig, task, seed: int | None = None) -> nn.Module:
    """A SequenceModel, or an EncoderDecoder for an encdec task (an AttentionEncoderDecoder with
    cfg.attention); a TransformerModel or TransformerEncoderDecoder for arch="transformer".
    `task` is a Task or a TaskSpec. The model's `vocab` is the task's vocabulary (token -> text),
    or None for a task of values or a bare TaskSpec: a checkpoint keeps it, so that a model is
    never read with another vocabulary of the same size.
    With a seed, the initial weights are the same every time (and torch's global generator is
    left as it was); without one, they come from torch's global generator."""
    spec = task if isinstance(task, TaskSpec) else getattr(task, "spec", None)
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"build_model needs a task (engine.make_task(...)) or its TaskSpec, got {task!r}")
    kind = model_class(cfg, spec)
    if seed is None:
        with GLOBAL_RNG_LOCK:  # draws from the global generator, but never mid-way through a seeded run
            model = kind(cfg, spec)
    else:
        with PrivateRNG(seed).active():
            model = kind(cfg, spec)
    model.vocab = None if isinstance(task, TaskSpec) else getattr(task, "vocab", None)
    return model
