"""Sentiment read character by character: the task a pretrained char language model is reused for.

The reviews are the sentiment task's (the shipped set or an uploaded CSV, parsed once), each
written as its words joined by single spaces, so the characters are those `words` keeps: a-z,
0-9, the apostrophe and the space. Every one of them is in the shipped char LMs' vocabulary, so
a model that learnt to read Python source can read a review with the rows it already has.
"""
from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from ..config import ModelConfig, check_int
from ..train_config import TrainConfig
from .base import Preset, TaskSpec, check_seq_len
from .features import char_features
from .review_csv import ParsedReviews
from .sentiment import ReviewTask, held_out_split, reviews_of
from .text import words

PAD = "<pad>"
ALPHABET = tuple(" '0123456789abcdefghijklmnopqrstuvwxyz")  # what text.words keeps, accents taken off
KNOWN = frozenset(ALPHABET)


def plain(text: str) -> str:
    """Accents taken off (é → e: the char LMs read ASCII), any character still outside ALPHABET dropped."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return "".join(ch for ch in ascii_text if ch in KNOWN)


def review_texts(reviews: ParsedReviews) -> list[str]:
    """Every review as its words joined by single spaces, in ALPHABET's characters."""
    return [plain(" ".join(reviews.review(i))) for i in range(len(reviews))]


def last_chars(texts: list[str], seq_len: int) -> np.ndarray:
    """[N, seq_len] uint8: each text's last seq_len characters as ids into (PAD,) + ALPHABET,
    front-padded. One byte a character: an IMDB-size upload holds 50,000 x 220 of them."""
    index = {ch: i + 1 for i, ch in enumerate(ALPHABET)}
    rows = np.zeros((len(texts), seq_len), dtype=np.uint8)  # [N, T]: 0 is PAD
    for row, text in zip(rows, texts):
        tail = text[-seq_len:]
        if tail:
            row[seq_len - len(tail):] = [index[ch] for ch in tail]
    return rows


@dataclass
class CharSentimentTask(ReviewTask):
    """Positive or negative after the review's last character. Each review is cut to its last
    seq_len characters and padded at the front; 20% of the reviews are held out, split as the
    word-level task splits them (the same seed draws the same order over the distinct reviews).

    csv_text: a `review,sentiment` CSV (text or bytes) or its ParsedReviews; None uses the
    shipped generated set, whose longest review is 218 characters.
    train_reviews: train on only the first this many training reviews (0: all of them), the
    held-out ones unchanged: how much labelled data transfer learning saves.
    """

    seq_len: int = 220
    train_reviews: int = 0
    csv_text: str | bytes | ParsedReviews | None = None

    help: ClassVar[str] = "positive or negative, character by character (what a char LM is reused for)"
    symbol_separator: ClassVar[str] = ""  # characters of a text
    baseline_name: ClassVar[str] = "bag of characters"  # its tokens' counts: which letters occur, a weak line
    token_name: ClassVar[str] = "characters"
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=128, embedding_dim=32),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0),
        steps=400,
        lesson=(
            "Read by characters, a review is five times longer than read by words: the verdict's "
            "'not' sits dozens of steps before its adjective. Transfer learning starts this model "
            "from a char LM that has already learnt to read."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        check_int("train_reviews", self.train_reviews, 0, 10_000_000)
        reviews = reviews_of(self.csv_text)
        if self.csv_text is not None:  # kept parsed, so a copy with other settings does not parse again
            self.csv_text = reviews
        self.vocab = (PAD, *ALPHABET)
        x = last_chars(review_texts(reviews), self.seq_len)  # [N, T]
        train_x, train_y, self.test_x, self.test_y = held_out_split(x, reviews.labels, self.seed)
        self.train_x, self.train_y = train_x[: self.train_reviews or None], train_y[: self.train_reviews or None]
        self.spec = TaskSpec("char_sentiment", "seq2vec", "tokens", len(self.vocab), output_size=2, loss="ce",
                             pad_id=0)

    def encode(self, text: str) -> torch.Tensor:
        """A review typed by the student, as the model sees it: [T] character ids, front-padded."""
        return torch.from_numpy(last_chars([plain(" ".join(words(text)))], self.seq_len)[0]).long()  # [T]

    def input_features(self, symbols, x):
        return char_features([" " if s == PAD else s for s in symbols])

    def decode(self, ids) -> str:
        return "".join(self.vocab[int(i)] for i in ids if int(i) != self.spec.pad_id)


@functools.cache
def training_text() -> str:
    """The shipped reviews this task trains on with seed 0, one per line: the char LM's "reviews"
    corpus, which never holds a review the task holds out."""
    task = CharSentimentTask(seed=0)
    return "\n".join(task.decode(row) for row in task.train_x)
