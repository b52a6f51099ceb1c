"""Sequence copying for an encoder-decoder: read a sequence of symbols, write it out again."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..config import ModelConfig
from ..train_config import TrainConfig
from .base import Preset
from .reverse import ReverseTask


@dataclass
class CopyTask(ReverseTask):
    """Source: seq_len symbols; target: the same symbols in the same order, then <eos> (target
    token s+2 stands for symbol s). Attention that has learned the task looks at source token t
    when writing target token t: its alignment is the diagonal, where reversal's is the
    anti-diagonal. Without attention copying is the harder of the two: the first token to
    write is the one the encoder read longest ago."""

    help: ClassVar[str] = "encoder-decoder: write the input sequence out again, in the same order"
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=32, embedding_dim=16, bidirectional=True, attention="dot"),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=64, clip_norm=1.0),
        steps=400,
        lesson=(
            "With dot-product attention a bidirectional LSTM encoder-decoder copies 20 symbols (about 97% of "
            "whole sequences right after 400 steps, a few seconds), and its alignment is the diagonal: "
            "target step t looks hardest at source token t. Switch attention off and, in the same 400 "
            "steps, it gets no whole sequence right (30% of the symbols)."
        ),
    )

    seq_len: int = 20

    def __post_init__(self) -> None:
        super().__post_init__()
        self.spec = dataclasses.replace(self.spec, name="copy")

    def sample(self, batch_size, generator):
        x = torch.randint(0, self.symbols, (batch_size, self.seq_len), generator=generator)  # [B, T]
        eos = torch.ones(batch_size, 1, dtype=torch.long)  # [B, 1]
        return x, torch.cat([x + 2, eos], dim=1)  # y: [B, T+1]
