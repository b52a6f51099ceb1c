"""Parity: is the number of ones so far odd? One bit of memory, flipped by every 1."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from ..config import ModelConfig
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec, check_seq_len
from .features import channel_values


@dataclass
class ParityTask(Task):
    """Inputs are bits. With running=False the single target after the last step is the parity
    of the whole sequence (seq2vec; a change in any bit flips the answer, so nothing can be
    ignored). With running=True every step's target is the parity so far (aligned seq2seq):
    the same one bit of memory, but with a training signal at every step."""

    seq_len: int = 10
    running: bool = True

    help: ClassVar[str] = "is the number of ones so far odd?"
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="gru", hidden_size=32),
        train=TrainConfig(optimizer="adam", lr=1e-2, batch_size=64, clip_norm=1.0),
        steps=500,
        lesson=(
            "Parity needs one bit of memory that every 1 flips. With a target after every bit (running "
            "parity) a 32-unit GRU gets all 10 right within 500 steps. Switch `running` off, so the only "
            "target comes after the last bit, and the same network stays at chance from 4 bits on: the "
            "computation is the same, but one signal at the end gives gradient descent no slope to follow."
        ),
    )

    @property
    def baseline_loss(self) -> float:
        """Cross-entropy of a coin toss."""
        return math.log(2)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        if not isinstance(self.running, bool):
            raise ValueError(f"running must be True or False, got {self.running!r}")
        mapping = "seq2seq" if self.running else "seq2vec"
        self.spec = TaskSpec("parity", mapping, "values", input_size=1, output_size=2, loss="ce")

    def sample(self, batch_size, generator):
        bits = torch.randint(0, 2, (batch_size, self.seq_len), generator=generator)  # [B, T]
        running_parity = bits.cumsum(dim=1) % 2  # [B, T]
        y = running_parity if self.running else running_parity[:, -1]  # [B, T] or [B]
        return bits.unsqueeze(2).float(), y  # x: [B, T, 1]

    @property
    def class_names(self):
        return ("even", "odd")  # the count of ones so far, mod 2

    def input_features(self, symbols, x):
        bits = channel_values(x)[:, 0]  # [T]
        return {"bit": bits, "parity so far": np.cumsum(bits) % 2}
