"""A model's parts, in forward order: what the network diagram and the parameter table draw.

Every model's `describe()` returns a list of `Part`s, built from its modules (never by parsing
parameter names), and its `param_groups()` (the parts a Trainer can freeze) are read from it.
Shapes are per sample, with symbolic lengths: "T" the input (or target) sequence, "S" an
encoder-decoder's source.
"""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from .config import ModelConfig
from .recurrent import layer_weights

ROLES = ("input", "core", "head")  # every model has at least one part of each, in that order
KINDS = ("input", "embedding", "positional encoding", "recurrent", "attention", "transformer block",
         "linear", "linear head", "pointer")  # pointer: a head whose output is attention over the input positions
ARROWS = {None: "", 0: "→", 1: "←"}
STEPS = {0: "0", -1: "T", None: "t"}

Shape = tuple[int | str, ...]


@dataclass(frozen=True)
class Read:
    """One state the head reads: of `stack`'s `layer`, `direction` (None: a stack with one
    direction), at step t (0 the first, -1 the last, None every step). `symbol` is "h" for a
    recurrent state, "x" for a transformer block's output."""

    stack: str
    layer: int
    direction: int | None
    t: int | None
    symbol: str = "h"

    @property
    def label(self) -> str:
        """e.g. "h→_T", "h←_0", "h_t", "x_T"."""
        return f"{self.symbol}{ARROWS[self.direction]}_{STEPS[self.t]}"


@dataclass(frozen=True)
class Part:
    """One part of a model. `params` are its parameters' names (a part without any, such as a
    sinusoidal position signal or a dot-product score, has none); `stack` names the recording's
    stack it belongs to ("rnn", "encoder", "decoder"; "" for none)."""

    name: str  # "embedding", "layer 0", "encoder layer 1", "head", ...: the key of param_groups()
    kind: str  # one of KINDS
    role: str  # one of ROLES
    input_shape: Shape
    output_shape: Shape
    parameters: int
    params: tuple[str, ...] = ()
    stack: str = ""
    # recurrent layers
    arch: str | None = None  # "rnn", "lstm", "gru"
    layer: int | None = None  # this layer's index in its stack (also a transformer block's)
    layers: int | None = None  # layers in its stack
    directions: int | None = None
    hidden_size: int | None = None  # H per direction
    # attention (a recurrent decoder's) and transformer blocks
    score: str | None = None  # "dot", "general", "additive", "scaled_dot", "cosine", "location"
    heads: int | None = None
    # the head: the states it reads, e.g. [h→_T ; h←_0] for a bidirectional seq2vec model
    reads: tuple[Read, ...] = ()

    @property
    def shape(self) -> str:
        """"[T, 16] → [T, 128]"."""
        return f"{list(self.input_shape)} → {list(self.output_shape)}".replace("'", "")


def names_of(model: nn.Module, tensors) -> tuple[str, ...]:
    """The model's names of these parameters, in the model's order."""
    wanted = {id(t) for t in tensors}
    return tuple(name for name, p in model.named_parameters() if id(p) in wanted)


def count(model: nn.Module, names: tuple[str, ...]) -> int:
    named = dict(model.named_parameters())
    return sum(named[n].numel() for n in names)


def module_part(model: nn.Module, module: nn.Module | None, name: str, kind: str, role: str,
                input_shape: Shape, output_shape: Shape, **extra) -> Part:
    """A part made of one module's parameters (None: a part without parameters)."""
    names = names_of(model, module.parameters()) if module is not None else ()
    return Part(name, kind, role, input_shape, output_shape, count(model, names), names, **extra)


def layer_tensors(rnn: nn.Module, cfg: ModelConfig, layer: int) -> list[Tensor]:
    tensors = []
    for direction in range(cfg.num_directions):
        w = layer_weights(rnn, layer, direction)
        tensors += [w.w_ih, w.w_hh, w.b_ih, w.b_hh, *(w.peephole or ())]
        if w.norms is not None:  # layer_norm's gains (and the LSTM's LN(c_t) bias)
            n = w.norms
            tensors += [t for t in (n.gain_ih, n.gain_hh, n.gain_c, n.bias_c) if t is not None]
    return tensors


def recurrent_parts(model: nn.Module, stack: str, cfg: ModelConfig, rnn: nn.Module, input_shape: Shape,
                    prefix: str = "") -> list[Part]:
    """One part per layer of a recurrent stack, reading input_shape ([T, D])."""
    parts, shape = [], input_shape
    for layer in range(cfg.num_layers):
        names = names_of(model, layer_tensors(rnn, cfg, layer))
        out = (shape[0], cfg.num_directions * cfg.hidden_size)  # [T, dirs*H]
        parts.append(Part(
            f"{prefix}layer {layer}", "recurrent", "core", shape, out, count(model, names), names, stack,
            arch=cfg.arch, layer=layer, layers=cfg.num_layers, directions=cfg.num_directions,
            hidden_size=cfg.hidden_size,
        ))
        shape = out
    return parts


def groups(parts: list[Part]) -> dict[str, list[str]]:
    """param_groups() from describe(): each part that has parameters, by name, in forward order."""
    return {part.name: list(part.params) for part in parts if part.params}
