"""Character-level language model: predict the next character of real text."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from ..config import ModelConfig, check_choice
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec, check_seq_len
from .char_sentiment import training_text
from .features import char_features
from .text import char_vocab, charlm_corpus, decode_text, shakespeare

CORPORA = ("python", "reviews", "shakespeare")
# The share of a shipped corpus, from its start, that the task trains on; the rest is held out.
# Tiny Shakespeare is cut as nanoGPT cuts it (data/shakespeare_char/prepare.py: the first
# int(n * 0.9) characters train, the rest validate), so its held-out figures compare with nanoGPT's.
# The Python corpus trains on all of it in the lab (its checkpoints hold out its last file:
# pretrained/heldout.py), and the reviews' text already leaves out the reviews held out for sentiment.
TRAIN_SHARE = {"shakespeare": 0.9}


def shipped_corpus(name: str) -> str:
    return {"python": charlm_corpus, "reviews": training_text, "shakespeare": shakespeare}[name]()


def char_ids(text: str, vocab: tuple[str, ...]) -> torch.Tensor:
    """[N] uint8: each character's index in `vocab`, the sorted characters of `text` (at most 256,
    text.MAX_CHAR_VOCAB). One byte a character: as int64, Tiny Shakespeare would hold 8.9 MB a lab,
    and a Python loop over its 1.1 million characters took 0.3 s where numpy takes 0.05 s."""
    points = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")  # [N] code points
    table = np.array([ord(ch) for ch in vocab], dtype="<u4")  # [V], ascending as vocab is
    return torch.from_numpy(np.searchsorted(table, points).astype(np.uint8))  # [N]


@dataclass
class CharLMTask(Task):
    """Windows of seq_len characters; the target at each step is the next character.

    text: the corpus; None uses the shipped one `corpus` names: "python", a snapshot of a few of
    the Python standard library's source files (engine/data/charlm_corpus.txt), the same under
    every Python version; "reviews", the text of the shipped reviews the char-level sentiment
    task trains on, one per line (its held-out reviews left out), which a language model can
    learn from before it is reused for their sentiment; or "shakespeare", Tiny Shakespeare
    (engine/data/shakespeare.txt), char-rnn's and nanoGPT's corpus, whose last 10% the task
    never trains on (TRAIN_SHARE): the text from `train_end` on is held out.
    """

    seq_len: int = 100
    corpus: str = "python"
    text: str | bytes | None = None

    help: ClassVar[str] = "predict the next character of real text: Python's own source, Shakespeare, or yours"
    symbol_separator: ClassVar[str] = ""  # characters of a text
    writes_text: ClassVar[bool] = True
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"corpus": CORPORA}
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=128, embedding_dim=32),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0),
        steps=1000,
        lesson=(
            "A 128-unit char-LSTM reading Python's own source (the default corpus) drops from the 5.1 nats "
            "of guessing uniformly among its characters to about 1.3 nats (two in three next characters "
            "right) in 1000 steps, under half a minute on one core."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        check_choice("corpus", self.corpus, CORPORA)
        corpus = shipped_corpus(self.corpus) if self.text is None else decode_text(self.text, "corpus")
        if len(corpus) < self.seq_len + 1:
            raise ValueError(
                f"the corpus has {len(corpus)} characters, fewer than seq_len + 1 = {self.seq_len + 1}; "
                "give more text or shorten seq_len"
            )
        self.text = None if self.text is None else corpus
        self.vocab = char_vocab(corpus)
        self.ids = char_ids(corpus, self.vocab)  # [N]
        # Where the held-out text starts: training windows end before it (all of a corpus without a split).
        self.train_end = int(len(self.ids) * TRAIN_SHARE.get(self.corpus, 1.0)) if self.text is None else len(self.ids)
        self.spec = TaskSpec("charlm", "seq2seq", "tokens", len(self.vocab), len(self.vocab), loss="ce")

    def sample(self, batch_size, generator):
        # The last start is train_end - T - 1, so its window's last target is the last training character.
        starts = torch.randint(0, self.train_end - self.seq_len, (batch_size,), generator=generator)  # [B]
        window = starts[:, None] + torch.arange(self.seq_len + 1)  # [B, T+1]
        chunk = self.ids[window].long()  # [B, T+1]
        return chunk[:, :-1], chunk[:, 1:]  # x, y: [B, T]

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids)

    def encode(self, text: str) -> torch.Tensor:
        index = {ch: i for i, ch in enumerate(self.vocab)}
        unknown = sorted(set(text) - set(index))
        if unknown:
            raise ValueError(f"characters {unknown!r} are not in this corpus's vocabulary; remove them")
        return torch.tensor([index[ch] for ch in text])  # [T]

    @property
    def class_names(self):
        return self.vocab  # the next character

    def input_features(self, symbols, x):
        return char_features(symbols)

    @property
    def baseline_loss(self) -> float:
        """Cross-entropy of guessing uniformly among the corpus's characters."""
        return math.log(len(self.vocab))
