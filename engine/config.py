"""ModelConfig: what network to build, validated on construction.

Every check raises a ValueError that says which field to change and to what, because a student
typing into a form (or a teacher editing a link) should learn what went wrong, not read a traceback.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

ARCHS = ("rnn", "lstm", "gru")
ACTIVATIONS = ("tanh", "relu", "sigmoid", "linear")
INITS = ("default", "orthogonal", "identity", "scaled")

MAX_HIDDEN = 1024
MAX_LAYERS = 8
MAX_EMBEDDING = 512


def check_int(name: str, value, low: int, high: int) -> None:
    """A whole number in [low, high], with a message naming the field and the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, got {value}")


def check_float(name: str, value, low: float, high: float, *, low_open: bool = False) -> None:
    """A finite number in [low, high] (or (low, high] with low_open)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    too_low = value <= low if low_open else value < low
    if too_low or value > high:
        bracket = "(" if low_open else "["
        raise ValueError(f"{name} must be in {bracket}{low}, {high}], got {value}")


def check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def from_known_fields(cls, data: dict):
    """Build a config dataclass from a dict (a checkpoint, a link), naming any unknown field."""
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}; known: {sorted(known)}")
    return cls(**data)


@dataclass(frozen=True)
class ModelConfig:
    """A recurrent network: cell, size, depth, direction, and how its weights start.

    arch            "rnn" (Elman), "lstm" or "gru"
    activation      RNN only: "tanh", "relu", "sigmoid" or "linear"
    peephole        LSTM only: gates also see the cell state (Gers & Schmidhuber 2000)
    embedding_dim   size of the token embedding, used when the task's inputs are tokens
    dropout         between stacked layers, as nn.LSTM applies it (training only)
    init            "default" (PyTorch's uniform), "orthogonal" W_hh, "identity" W_hh with zero
                    bias (IRNN, Le et al. 2015), or "scaled": W_hh rescaled to `spectral_radius`
    spectral_radius init="scaled" only, and required there: the largest |eigenvalue| of every
                    W_hh (or gate block)
    forget_bias     LSTM only: initial value of the forget-gate bias (b_if + b_hf); None keeps
                    PyTorch's default. 1.0 is the common choice (Jozefowicz et al. 2015).
    """

    arch: str = "lstm"
    hidden_size: int = 64
    num_layers: int = 1
    bidirectional: bool = False
    activation: str = "tanh"
    peephole: bool = False
    embedding_dim: int = 16
    dropout: float = 0.0
    init: str = "default"
    spectral_radius: float | None = None
    forget_bias: float | None = None

    def __post_init__(self) -> None:
        check_choice("arch", self.arch, ARCHS)
        check_int("hidden_size", self.hidden_size, 1, MAX_HIDDEN)
        check_int("num_layers", self.num_layers, 1, MAX_LAYERS)
        if not isinstance(self.bidirectional, bool):
            raise ValueError(f"bidirectional must be True or False, got {self.bidirectional!r}")
        check_choice("activation", self.activation, ACTIVATIONS)
        if self.activation != "tanh" and self.arch != "rnn":
            raise ValueError(
                f"activation={self.activation!r} applies to arch='rnn' only; "
                f"{self.arch.upper()} gates fix their own nonlinearities. Use activation='tanh'."
            )
        if self.peephole and self.arch != "lstm":
            raise ValueError("peephole connections exist only for arch='lstm'; set peephole=False")
        check_int("embedding_dim", self.embedding_dim, 1, MAX_EMBEDDING)
        check_float("dropout", self.dropout, 0.0, 0.9)
        if self.dropout > 0 and self.num_layers == 1:
            raise ValueError("dropout acts between stacked layers; set num_layers >= 2 or dropout=0")
        check_choice("init", self.init, INITS)
        if (self.init == "scaled") != (self.spectral_radius is not None):
            raise ValueError(
                "spectral_radius goes with init='scaled' (and init='scaled' needs one): set both, "
                "e.g. init='scaled', spectral_radius=1.1, or neither"
            )
        if self.spectral_radius is not None:
            check_float("spectral_radius", self.spectral_radius, 0.0, 10.0, low_open=True)
        if self.forget_bias is not None:
            if self.arch != "lstm":
                raise ValueError("forget_bias applies to arch='lstm' only; leave it None")
            check_float("forget_bias", self.forget_bias, -10.0, 10.0)

    @property
    def num_directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def uses_fused_kernel(self) -> bool:
        """True when nn.RNN / nn.LSTM / nn.GRU compute this cell; False for our written-out loop."""
        if self.arch == "lstm":
            return not self.peephole
        if self.arch == "rnn":
            return self.activation in ("tanh", "relu")
        return True

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        return from_known_fields(cls, data)
