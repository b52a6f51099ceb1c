"""Sequence reversal for an encoder-decoder: read a sequence of symbols, write it backwards."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ..config import ModelConfig, check_int
from ..losses import sequence_accuracy
from ..train_config import TrainConfig
from .base import MAX_SEQ_LEN, Preset, Task, TaskSpec

SPECIALS = ("<sos>", "<eos>")  # target tokens 0 and 1, the EncoderDecoder's convention


@dataclass
class ReverseTask(Task):
    """Source: seq_len symbols (tokens 0..symbols-1). Target: the same symbols in reverse order,
    then <eos>; target token s+2 stands for symbol s. The first output is the last input, so the
    encoder's final state must hold the whole sequence: without attention, a bottleneck."""

    seq_len: int = 8
    symbols: int = 8

    help: ClassVar[str] = "encoder-decoder: write the input sequence backwards"
    decodes: ClassVar[bool] = True
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=64, embedding_dim=16),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=64, clip_norm=1.0),
        steps=1500,
        lesson=(
            "An LSTM encoder-decoder learns to reverse 8 symbols (about 95% of whole sequences right after "
            "1500 steps, seconds on a laptop) by squeezing them all into the encoder's last state. "
            "Lengthen the sequence and watch that bottleneck."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("seq_len", self.seq_len, 2, MAX_SEQ_LEN - 1)  # the target adds <eos>
        check_int("symbols", self.symbols, 2, 1000)
        self.vocab = tuple(str(s) for s in range(self.symbols))
        self.target_vocab = SPECIALS + self.vocab
        self.spec = TaskSpec(
            "reverse", "encdec", "tokens", input_size=self.symbols, output_size=self.symbols + 2,
            loss="ce", out_len=self.seq_len + 1,
        )

    def sample(self, batch_size, generator):
        x = torch.randint(0, self.symbols, (batch_size, self.seq_len), generator=generator)  # [B, T]
        eos = torch.ones(batch_size, 1, dtype=torch.long)  # [B, 1]
        return x, torch.cat([x.flip(1) + 2, eos], dim=1)  # y: [B, T+1]

    @property
    def class_names(self):
        return self.target_vocab

    def sequence_accuracy(self, y_hat: torch.Tensor, y: torch.Tensor) -> float:
        """Share of samples with every target token right."""
        return sequence_accuracy(y_hat, y)
