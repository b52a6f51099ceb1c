"""Sentiment: read a review word by word, say positive or negative after the last word."""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..config import ModelConfig, check_int
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec, check_seq_len
from .features import word_features
from .reviews import REVIEWS_CSV
from .text import decode_text, word_vocab, words

CLASS_NAMES = ("negative", "positive")
LABELS = {"negative": 0, "positive": 1, "0": 0, "1": 1, "neg": 0, "pos": 1}
MAX_WORD_VOCAB = 20_000
MAX_CSV_CHARS = 100_000_000  # the IMDB 50K file is about 66 million characters
TEST_SHARE = 0.2


def read_reviews(csv_text: str) -> tuple[list[str], list[int]]:
    """Rows of a `review,sentiment` CSV (the Kaggle IMDB 50K layout), or a ValueError saying what to fix."""
    try:
        return parse_reviews(csv_text)
    except csv.Error as err:
        raise ValueError(
            f"the CSV cannot be read ({err}); a quote that is opened and never closed is the usual "
            "cause: quote each review that contains commas, and double any quote inside it"
        ) from None


def parse_reviews(csv_text: str) -> tuple[list[str], list[int]]:
    reader = csv.DictReader(io.StringIO(csv_text))
    columns = [c.strip().lower() for c in (reader.fieldnames or [])]
    if "review" not in columns or "sentiment" not in columns:
        raise ValueError(
            f"the CSV needs columns 'review' and 'sentiment' (the IMDB 50K layout); it has {columns or 'none'}"
        )
    reader.fieldnames = columns
    reviews, labels = [], []
    for row in reader:
        label = (row["sentiment"] or "").strip().lower()
        if label not in LABELS:
            raise ValueError(
                f"line {reader.line_num}: sentiment {row['sentiment']!r} is not one of positive/negative (or 1/0)"
            )
        reviews.append(row["review"] or "")
        labels.append(LABELS[label])
    return reviews, labels


@dataclass
class SentimentTask(Task):
    """Reviews are lower-cased, split into words and mapped to the max_vocab most frequent words
    (others become <unk>). Each is cut to its last seq_len words and padded at the front, so the
    model's last step is always the review's last word. 20% of the reviews are held out.

    csv_text: a `review,sentiment` CSV (text or bytes); None uses the shipped generated set.
    """

    seq_len: int = 40
    max_vocab: int = 2000
    csv_text: str | bytes | None = None

    help: ClassVar[str] = "positive or negative, word by word (generated reviews, or your CSV)"
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=64, embedding_dim=32),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0),
        steps=800,
        lesson=(
            "The shipped reviews hide their verdict in word order: 'was not good' and 'was good' share "
            "their words, so a bag of words tops out near 70% on the held-out reviews. An LSTM reading "
            "left to right carries the 'not' to the adjective and passes 95% within 800 steps."
        ),
    )

    @property
    def baseline_loss(self) -> float:
        """Cross-entropy of a coin toss (the labels are close to balanced)."""
        return math.log(2)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        check_int("max_vocab", self.max_vocab, 3, MAX_WORD_VOCAB)
        if self.csv_text is None:
            source = REVIEWS_CSV.read_text(encoding="utf-8")
        else:
            source = self.csv_text = decode_text(self.csv_text, "CSV file", limit=MAX_CSV_CHARS)
        reviews, labels = read_reviews(source)
        tokenised = [words(r) for r in reviews]
        self.vocab = word_vocab(tokenised, self.max_vocab)
        index = {w: i for i, w in enumerate(self.vocab)}
        pad = self.vocab.index("<pad>")
        # A review is kept once as the model sees it (its last seq_len words, rare ones as
        # <unk>): a repeat would otherwise sit in both the training and the held-out rows.
        rows: dict[tuple[int, ...], int] = {}
        for text, label in zip(tokenised, labels):
            ids = [index.get(w, 1) for w in text[-self.seq_len :]]
            rows.setdefault((pad,) * (self.seq_len - len(ids)) + tuple(ids), label)
        if len(rows) < 10:
            raise ValueError(f"the CSV has {len(rows)} distinct reviews; give at least 10")
        x = torch.tensor(list(rows))  # [N, T], front-padded with <pad>
        y = torch.tensor(list(rows.values()))  # [N]
        order = torch.randperm(len(y), generator=torch.Generator().manual_seed(self.seed))
        n_test = max(1, int(len(y) * TEST_SHARE))
        self.test_x, self.test_y = x[order[:n_test]], y[order[:n_test]]  # held out
        self.train_x, self.train_y = x[order[n_test:]], y[order[n_test:]]
        self.spec = TaskSpec("sentiment", "seq2vec", "tokens", len(self.vocab), output_size=2, loss="ce", pad_id=pad)

    def sample(self, batch_size, generator):
        rows = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)  # [B]
        return self.train_x[rows], self.train_y[rows]  # [B, T], [B]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.test_x, self.test_y

    def encode(self, text: str) -> torch.Tensor:
        """A review typed by the student, as the model sees it: [T] word ids, front-padded."""
        index = {w: i for i, w in enumerate(self.vocab)}
        ids = [index.get(w, 1) for w in words(text)[-self.seq_len :]]
        return torch.tensor([self.spec.pad_id] * (self.seq_len - len(ids)) + ids)  # [T]

    @property
    def class_names(self):
        return CLASS_NAMES

    def input_features(self, symbols, x):
        return word_features(symbols, pad=self.pad_symbol)

    def decode(self, ids) -> str:
        return " ".join(self.vocab[int(i)] for i in ids if int(i) != self.spec.pad_id)
