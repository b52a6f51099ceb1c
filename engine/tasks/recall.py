"""Delayed recall: say which symbol opened the sequence, `lag` steps ago. Short-term memory on
one slider."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F

from ..config import ModelConfig, check_int
from ..train_config import TrainConfig
from .base import MAX_SEQ_LEN, Preset, Task, TaskSpec


@dataclass
class RecallTask(Task):
    """Step 0 shows one of `symbols` signal symbols; the next `lag` steps show random distractors
    (from `distractors` other symbols). After the last step the model must name the signal.
    Inputs are one-hot over signals + distractors; chance accuracy is 1 / symbols."""

    lag: int = 50
    symbols: int = 4
    distractors: int = 4

    help: ClassVar[str] = "name the symbol seen lag steps ago"

    # Calibrated on this CPU over seeds 0-2 (about 100 runs): with Adam a tanh RNN learns this task
    # up to lag 50 if given 3000-5000 steps, so the budget matters as much as the lag; 2000 steps
    # at lr 1e-3 keep it (and the GRU) at chance every time. A default LSTM is no better; its
    # forget gate must start open (bias 3; bias 1 only carries it to lag 20).
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=64, forget_bias=3.0),
        train=TrainConfig(optimizer="adam", lr=1e-3, batch_size=64, clip_norm=1.0),
        steps=2000,
        lesson=(
            "At lag 50 a tanh RNN and a GRU stay at chance (25%) for all 2000 steps, while an LSTM whose "
            "forget gate starts open (forget bias 3) names the signal every time within a few hundred "
            "steps. Set the lag to 5 and all three succeed: what fails is memory across time."
        ),
    )

    @property
    def baseline_loss(self) -> float:
        """Cross-entropy of guessing uniformly among the signal symbols."""
        return math.log(self.symbols)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("lag", self.lag, 1, MAX_SEQ_LEN - 1)
        check_int("symbols", self.symbols, 2, 64)
        check_int("distractors", self.distractors, 1, 64)
        width = self.symbols + self.distractors
        self.vocab = tuple(f"S{i}" for i in range(self.symbols)) + tuple(f"d{i}" for i in range(self.distractors))
        self.spec = TaskSpec("recall", "seq2vec", "values", input_size=width, output_size=self.symbols, loss="ce")

    @property
    def seq_len(self) -> int:
        return self.lag + 1

    def sample(self, batch_size, generator):
        signal = torch.randint(0, self.symbols, (batch_size,), generator=generator)  # [B]
        noise = self.symbols + torch.randint(0, self.distractors, (batch_size, self.lag), generator=generator)  # [B, L]
        tokens = torch.cat([signal[:, None], noise], dim=1)  # [B, L+1]
        x = F.one_hot(tokens, self.symbols + self.distractors).float()  # [B, L+1, S+D]
        return x, signal

    def symbols_of(self, x):
        """One-hot inputs [T, S+D] read as the symbol each step shows."""
        return [self.vocab[i] for i in x.argmax(dim=1).tolist()]  # [T]

    @property
    def class_names(self):
        return self.vocab[: self.symbols]  # the signal symbols come first in the vocabulary
