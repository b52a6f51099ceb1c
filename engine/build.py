"""build_model: the network a ModelConfig describes, in the shape a task needs.

The class comes from MODELS, keyed by (family, shape): a new model is one entry there and a class
that meets engine.contract.Model, not another branch here.
"""
from __future__ import annotations

from torch import nn

from .arguments import check_kind
from .attention_seq2seq import AttentionEncoderDecoder
from .config import LOCATION_POSITIONS, ModelConfig, check_int
from .model import SequenceModel
from .pointer import PointerNetwork
from .rng import GLOBAL_RNG_LOCK, PrivateRNG
from .seq2seq import EncoderDecoder
from .tasks import TASKS
from .tasks.base import Task, TaskSpec
from .transformer import TransformerModel
from .transformer_seq2seq import TransformerEncoderDecoder

# (family, shape) -> class. family: "recurrent" or "transformer"; shape: "one stack" (seq2vec,
# seq2seq, vec2seq), "encoder-decoder", "encoder-decoder with attention" (recurrent only:
# a transformer's decoder always attends), or "pointer network" (a pointer task's, recurrent).
MODELS: dict[tuple[str, str], type[nn.Module]] = {
    ("recurrent", "one stack"): SequenceModel,
    ("recurrent", "encoder-decoder"): EncoderDecoder,
    ("recurrent", "encoder-decoder with attention"): AttentionEncoderDecoder,
    ("recurrent", "pointer network"): PointerNetwork,
    ("transformer", "one stack"): TransformerModel,
    ("transformer", "encoder-decoder"): TransformerEncoderDecoder,
}


def check_pointer(cfg: ModelConfig, spec: TaskSpec) -> None:
    """A pointer network is recurrent, reads values, and points with an attention score."""
    if cfg.arch == "transformer":
        raise ValueError(
            f"this {spec.name} task answers with positions of its input, which a pointer network writes, and its "
            "encoder and decoder are recurrent (Vinyals et al. 2015); use arch='lstm', 'gru' or 'rnn'"
        )
    if cfg.attention is None:
        raise ValueError(
            "a pointer network's output is its attention over the input positions, so it needs a score "
            "function: set attention (the paper's is 'additive')"
        )
    if spec.input_kind != "values":
        raise ValueError(f"the pointer network here reads values, and this {spec.name} task's inputs are tokens")
    keys = spec.output_size - 1  # the end marker and every position
    if cfg.attention == "location" and keys > LOCATION_POSITIONS:
        raise ValueError(
            f"location-based attention scores at most {LOCATION_POSITIONS} positions (W_a has one row per "
            f"position), and this {spec.name} task's pointer chooses among {keys} (the end marker and "
            f"{keys - 1} inputs); use a shorter input or another score function"
        )


def check_fields(cfg: ModelConfig, spec: TaskSpec) -> None:
    """ValueError naming the field to change when a field of cfg does not fit this task's shape."""
    if spec.mapping == "pointer":
        check_pointer(cfg, spec)
        return
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


def check_reads_ahead(cfg: ModelConfig, spec: TaskSpec) -> None:
    """A task whose target at each position is the next input (a character or word language model) refuses
    a model that reads the whole window: a backward direction, or a transformer without its causal mask,
    reads the very token it is asked to predict, and its loss falls to nothing having learned no language."""
    task = TASKS.get(spec.name)  # a checkpoint's header names its task too
    if task is not None and task.predicts_next and cfg.bidirectional:
        reader = "a transformer without its causal mask" if cfg.arch == "transformer" else \
            "a bidirectional layer's backward direction"
        raise ValueError(
            f"this {spec.name} task predicts each next token from the ones before it, and {reader} reads "
            "the token it is asked to predict; set bidirectional=False"
        )


def check_source_length(cfg: ModelConfig, task: Task) -> None:
    """Location-based attention scores LOCATION_POSITIONS source positions at most: a task with a
    longer source is refused when the model is built, not at its first step."""
    if cfg.attention != "location" or task.spec.mapping != "encdec":  # a pointer's spec says its length
        return
    # From the task's sizes, no sample drawn: a task made from a checkpoint's header has none until its corpus is here
    source = task.source_len
    if source > LOCATION_POSITIONS:
        raise ValueError(
            f"location-based attention scores at most {LOCATION_POSITIONS} source positions (W_a has one row "
            f"per position), and this {task.spec.name} task's source has {source}; use a source of at most "
            f"{LOCATION_POSITIONS} tokens (seq_len) or another score function"
        )


def model_key(cfg: ModelConfig, spec: TaskSpec) -> tuple[str, str]:
    """The MODELS key of this config and task shape."""
    family = "transformer" if cfg.arch == "transformer" else "recurrent"
    if spec.mapping == "pointer":
        return "recurrent", "pointer network"
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
    cfg.attention); a TransformerModel or TransformerEncoderDecoder for arch="transformer"; a
    PointerNetwork for a pointer task (pointing with cfg.attention's score).
    `task` is a Task or a TaskSpec. The model's `vocab` is the task's vocabulary (token -> text),
    or None for a task of values or a bare TaskSpec: a checkpoint keeps it, so that a model is
    never read with another vocabulary of the same size; so is `target_vocab`, a task's output
    vocabulary where it has one of its own (translate's French words), else None.
    With a seed, the initial weights are the same every time (and torch's global generator is
    left as it was); without one, they come from torch's global generator."""
    check_kind("cfg", cfg, ModelConfig, "an engine.ModelConfig, e.g. engine.ModelConfig(arch='lstm', hidden_size=64)")
    if seed is not None:
        check_int("seed", seed, 0, 2**63 - 1)
    spec = task if isinstance(task, TaskSpec) else getattr(task, "spec", None)
    if not isinstance(spec, TaskSpec):
        raise ValueError(f"build_model needs a task (engine.make_task(...)) or its TaskSpec, got {task!r}")
    kind = model_class(cfg, spec)
    check_reads_ahead(cfg, spec)
    if isinstance(task, Task):
        check_source_length(cfg, task)
    if seed is None:
        with GLOBAL_RNG_LOCK:  # draws from the global generator, but never mid-way through a seeded run
            model = kind(cfg, spec)
    else:
        with PrivateRNG(seed).active():
            model = kind(cfg, spec)
    model.vocab = None if isinstance(task, TaskSpec) else getattr(task, "vocab", None)
    # A translator's French words: its checkpoint keeps them, so it writes words without its pairs.
    model.target_vocab = None if isinstance(task, TaskSpec) else getattr(task, "target_vocab", None)
    return model
