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
# What a student reads for each corpus where they pick one (the stored value and the link keep the key).
CORPUS_NAMES = {"python": "Python source", "reviews": "Reviews' text", "shakespeare": "Tiny Shakespeare"}
# The share of a corpus, from its start, that the task trains on; the rest is held out.
# Tiny Shakespeare is cut as nanoGPT cuts it (data/shakespeare_char/prepare.py: the first
# int(n * 0.9) characters train, the rest validate), so its held-out figures compare with nanoGPT's;
# a student's own text (`text`) is cut the same way (UPLOAD_SHARE).
# The Python corpus trains on all of it in the lab (its checkpoints hold out its last file:
# pretrained/heldout.py), and the reviews' text already leaves out the reviews held out for sentiment.
TRAIN_SHARE = {"shakespeare": 0.9}
UPLOAD_SHARE = 0.9
MIN_SEQ_LEN = 2  # check_seq_len's lowest


def shipped_corpus(name: str) -> str:
    return {"python": charlm_corpus, "reviews": training_text, "shakespeare": shakespeare}[name]()


def split_at(n: int, share: float) -> int:
    """Where the held-out text of n characters starts when the first `share` of it trains:
    int(n * share), nanoGPT's cut."""
    return int(n * share)


def shortest_split_text(seq_len: int, share: float) -> int:
    """The fewest characters a text cut at `share` needs for one training window and one
    held-out window of seq_len + 1 characters each (one window's input and its next characters)."""
    def fits(n: int) -> bool:
        end = split_at(n, share)
        return end >= seq_len + 1 and n - end >= seq_len + 1
    n = math.ceil((seq_len + 1) / min(share, 1 - share))  # about right; the loops settle int()'s rounding
    while not fits(n):
        n += 1
    while n > 1 and fits(n - 1):
        n -= 1
    return n


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

    text: the corpus, a student's own (str, or the bytes of an uploaded UTF-8 file); its last 10%
    is held out (UPLOAD_SHARE) and its vocabulary is every character of the whole text. None uses
    the shipped one `corpus` names: "python", a snapshot of a few of the Python standard library's
    source files (engine/data/charlm_corpus.txt), the same under every Python version; "reviews",
    the text of the shipped reviews the char-level sentiment task trains on, one per line (its
    held-out reviews left out), which a language model can learn from before it is reused for
    their sentiment; or "shakespeare", Tiny Shakespeare (engine.datasets' corpus "shakespeare"), char-rnn's
    and nanoGPT's corpus, whose last 10% the task never trains on (TRAIN_SHARE).

    Training windows end before `train_end`; the text from `train_end` on is held out
    (`held_out_windows`), and `holds_out` says whether there is any (not for "python" and
    "reviews", whose held-out text lies outside the task: pretrained/heldout.py).
    """

    seq_len: int = 100
    corpus: str = "python"
    text: str | bytes | None = None

    help: ClassVar[str] = "predict the next character of real text: Python's own source, Shakespeare, or yours"
    symbol_separator: ClassVar[str] = ""  # characters of a text
    writes_text: ClassVar[bool] = True
    predicts_next: ClassVar[bool] = True
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"corpus": CORPORA}
    choice_names: ClassVar[dict[str, dict[str, str]]] = {"corpus": CORPUS_NAMES}  # what a picker shows
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

    corpus_made: ClassVar[tuple[str, ...]] = ("ids", "train_end")

    @property
    def public_corpus(self) -> str | None:
        return "shakespeare" if self.corpus == "shakespeare" and self.text is None else None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        check_choice("corpus", self.corpus, CORPORA)
        corpus = shipped_corpus(self.corpus) if self.text is None else decode_text(self.text, "corpus")
        share = TRAIN_SHARE.get(self.corpus, 1.0) if self.text is None else UPLOAD_SHARE
        if "\x00" in corpus:  # no text file holds one; UTF-16 text and binary files are full of them
            raise ValueError(
                f"the corpus holds a NUL character (character {corpus.index(chr(0)):,}): it is a binary file or "
                "text saved as UTF-16, not plain text; save it as UTF-8 text and upload it again"
            )
        self.vocab = char_vocab(corpus)  # every character of the whole text, held-out part included
        check_length(len(corpus), self.seq_len, share)
        self.text = None if self.text is None else corpus
        self.ids = char_ids(corpus, self.vocab)  # [N]
        # Where the held-out text starts: training windows end before it (all of a corpus without a split).
        self.train_end = split_at(len(self.ids), share)
        self.spec = TaskSpec("charlm", "seq2seq", "tokens", len(self.vocab), len(self.vocab), loss="ce")

    def sample(self, batch_size, generator):
        # The last start is train_end - T - 1, so its window's last target is the last training character.
        starts = torch.randint(0, self.train_end - self.seq_len, (batch_size,), generator=generator)  # [B]
        return self.windows(starts)  # x, y: [B, T]

    @property
    def holds_out(self) -> bool:
        """Whether the task keeps held-out text of its own, from `train_end` on."""
        return self.train_end < len(self.ids)

    def held_out_starts(self, count: int | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """[W] where the held-out windows start, each seq_len + 1 characters inside ids[train_end:]:
        every window end to end (count None), else `count` distinct starts drawn at random from
        `generator`, in order (every possible start when there are no more than `count`)."""
        if not self.holds_out:
            raise ValueError(f"the {self.corpus} corpus holds no text out in this task; it trains on all of it")
        first, last = self.train_end, len(self.ids) - self.seq_len - 1  # the first and last possible start
        if count is None:
            return torch.arange(first, last + 1, self.seq_len)  # [W]
        possible = last - first + 1
        if possible <= count:
            return torch.arange(first, last + 1)  # [W]
        return first + torch.randperm(possible, generator=generator)[:count].sort().values  # [W]

    def windows(self, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) [W, T]: the windows of seq_len characters from `starts` [W], y one character on."""
        chunk = self.ids[starts[:, None] + torch.arange(self.seq_len + 1)].long()  # [W, T+1]
        return chunk[:, :-1], chunk[:, 1:]

    def held_out_windows(self, count: int | None = None,
                         generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(x, y) [W, T]: windows of the held-out text (held_out_starts), which no training batch reads."""
        return self.windows(self.held_out_starts(count, generator))

    def trained_on(self) -> str:
        """The text a model of this task trains on, in words: which corpus and which part of it."""
        n, end = len(self.ids), self.train_end
        part = (f"its first {end:,} of {n:,} characters ({end / n:.0%}; the rest is held out)" if self.holds_out
                else f"all {n:,} of its characters")
        what = {"python": "Python's own source (a few files of its standard library)",
                "reviews": "the text of the shipped film reviews the char-level sentiment task trains on",
                "shakespeare": "Tiny Shakespeare (char-rnn's and nanoGPT's corpus)"}[self.corpus]
        return f"{'your own text' if self.text is not None else what}: {part}"

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


def check_length(n: int, seq_len: int, share: float) -> None:
    """A ValueError saying what to change when a text of n characters, of which the first `share`
    trains, is too short for a window of seq_len + 1 characters in each part."""
    if share >= 1.0:
        if n < seq_len + 1:
            raise ValueError(f"the corpus has {n:,} characters, fewer than seq_len + 1 = {seq_len + 1}; "
                             "give more text or shorten seq_len")
        return
    end = split_at(n, share)
    if end >= seq_len + 1 and n - end >= seq_len + 1:
        return
    longest = max((t for t in range(MIN_SEQ_LEN, seq_len) if shortest_split_text(t, share) <= n), default=None)
    change = (f"give more text or shorten seq_len to at most {longest}" if longest is not None else
              f"give more text: even the shortest seq_len, {MIN_SEQ_LEN}, needs "
              f"{shortest_split_text(MIN_SEQ_LEN, share):,} characters")
    raise ValueError(
        f"the corpus has {n:,} characters, too few to train on and to hold out its last {1 - share:.0%}: each "
        f"part needs a window of seq_len + 1 = {seq_len + 1} characters, so at seq_len {seq_len} the text needs "
        f"at least {shortest_split_text(seq_len, share):,} characters; {change}"
    )
