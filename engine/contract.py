"""What every model is: the members build_model's classes have, and which the Trainer, engine.record,
the checkpoints, beam search and the app rely on. Every model is also a torch.nn.Module.

A new model class meets `Model` (and `Decoder` for an encdec or pointer task), and joins engine.build.MODELS.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from torch import Tensor, nn

from .config import ModelConfig
from .describe import Part
from .replay import Replay, Taps
from .tasks.base import TaskSpec


@runtime_checkable
class Model(Protocol):
    cfg: ModelConfig  # what network it is
    spec: TaskSpec  # the shape of task it was built for
    vocab: tuple[str, ...] | None  # its task's vocabulary (token id -> text), set by build_model

    def forward(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """y_hat for x; y (the target) is for teacher forcing, and ignored by a single stack."""

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The forward pass, for engine.record: every recorded stack (with `taps` made on every
        state whose gradient is recorded) and every attention's weights."""

    def describe(self) -> list[Part]:
        """Its parts in forward order (engine/describe.py)."""

    def param_groups(self) -> dict[str, list[str]]:
        """Parameter names by the part they belong to, for freezing: describe()'s parts with parameters."""

    def recurrent_stacks(self) -> dict[str, tuple[ModelConfig, nn.Module]]:
        """Each recurrent stack's config and module, by its recording's name; {} for a transformer."""


@runtime_checkable
class DecodingState(Protocol):
    """Where a decoder is, for a batch of sequences being decoded."""

    def select(self, index: Tensor) -> DecodingState:
        """Rows `index` ([K]) of the batch, in that order (a row may repeat): a beam's survivors."""


@runtime_checkable
class Decoder(Model, Protocol):
    """An encoder-decoder: it also decodes one token at a time (greedy, sampling, beam search)."""

    def start(self, x: Tensor) -> DecodingState:
        """Encode the source x ([B, S] tokens; a pointer network's [B, S, D] values) into where decoding starts."""

    def step(self, token: Tensor, decoding: DecodingState) -> tuple[Tensor, DecodingState]:
        """Read one token [B]; return the next token's logits [B, V] and where decoding is now."""
