"""Sentiment: read a review word by word, say positive or negative after the last word."""
from __future__ import annotations

import functools
import io
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
import torch

from .. import datasets
from ..bag_of_words import bag_of_words_accuracy
from ..config import ModelConfig, check_choice, check_int
from ..train_config import TrainConfig
from .base import Preset, Task, TaskSpec, check_seq_len
from .features import word_features
from .review_csv import ParsedReviews, parse_reviews, ranked_on
from .reviews import REVIEWS_CSV
from .text import words

CLASS_NAMES = ("negative", "positive")
SPECIALS = ("<pad>", "<unk>")  # word ids 0 and 1
MAX_WORD_VOCAB = 20_000
TEST_SHARE = 0.2
# "generated": the shipped template reviews (engine/tasks/reviews.py); "sentences": 3,000 real review
# sentences, labelled by hand, with a fixed held-out fifth (the corpus "sentences" of engine.datasets)
CORPORA = ("generated", "sentences")


@functools.cache
def shipped_reviews() -> ParsedReviews:
    """The shipped generated set, parsed once per process."""
    return parse_reviews(REVIEWS_CSV.read_bytes())


@functools.cache
def shipped_sentences() -> tuple[ParsedReviews, np.ndarray]:
    """The real sentences, parsed once per process, and which of them are held out [N] bool (the cut's
    split column, fixed: pretrained word vectors read only the training sentences); their words ranked by how
    often the training sentences use them, so the vocabulary's slots go to words a model can learn (ranked on all
    of them, words only held-out sentences use took 598 of the 5,000); CorpusMissing when the dataset's files are
    not on this machine."""
    data = datasets.corpus_bytes("sentences")
    held_out = pd.read_csv(io.BytesIO(data), usecols=["split"])["split"].to_numpy() == "held_out"  # [N]
    held_out.setflags(write=False)
    return ranked_on(parse_reviews(data), ~held_out), held_out  # the vocabulary: the training rows' words


# Words a run may read of each review (its last ones), and the share of a CSV's reviews the default reads whole.
READ_LENGTHS = (40, 100, 200, 400, 800)
MOST = 0.9


def words_for_most(reviews: ParsedReviews, share: float = MOST) -> int:
    """The fewest of READ_LENGTHS that read `share` of the reviews whole (the largest when none does): 40 for
    the real sentences (9 in 10 have at most 22 words), about 400 for IMDB's reviews (median 174 words)."""
    lengths = np.diff(reviews.starts)  # [N]
    needed = float(np.quantile(lengths, share)) if len(lengths) else 0.0
    return next((n for n in READ_LENGTHS if n >= needed), READ_LENGTHS[-1])


def longer_than(reviews: ParsedReviews, seq_len: int) -> int:
    """How many reviews have more than seq_len words: a run reading the last seq_len words cuts each."""
    return int((np.diff(reviews.starts) > seq_len).sum())


def last_words(reviews: ParsedReviews, seq_len: int, max_vocab: int) -> np.ndarray:
    """[N, seq_len] every review's last seq_len words as ids into SPECIALS + the max_vocab - 2
    most frequent words (the rest <unk>), front-padded with <pad>. Only the words read are copied:
    mapping all W word ids first took three int64 copies of them (435 MB for an IMDB-size file)."""
    ends = reviews.starts[1:, None].astype(np.int32)  # [N, 1]: W < 2**31 (the upload's character cap)
    positions = ends - seq_len + np.arange(seq_len, dtype=np.int32)  # [N, T]: where each step's word sits
    before = positions < reviews.starts[:-1, None]  # [N, T]: the pads in front of a short review
    np.maximum(positions, 0, out=positions)  # a pad's position, any valid one: replaced below
    words = reviews.word_ids[positions]  # [N, T] int32
    tokens = np.where(words < max_vocab - 2, words + 2, SPECIALS.index("<unk>"))  # [N, T]
    tokens[before] = SPECIALS.index("<pad>")
    return tokens.astype(np.int64)  # [N, T]: torch embeddings take int64


def reviews_of(csv_text: str | bytes | ParsedReviews | None) -> ParsedReviews:
    """The shipped reviews for None, else the CSV's, parsed now unless they already are."""
    if csv_text is None:
        return shipped_reviews()
    return csv_text if isinstance(csv_text, ParsedReviews) else parse_reviews(csv_text)


def held_out_split(x: np.ndarray, labels: np.ndarray, seed: int) -> tuple[torch.Tensor, ...]:
    """(train_x, train_y, test_x, test_y) of reviews x [N, T] as a model sees them and their labels
    [N]: each distinct row once (a repeat would otherwise sit in both the training and the held-out
    rows), shuffled by `seed`, the first TEST_SHARE of them held out."""
    kept = first_of_each(x)  # [distinct]
    if len(kept) < 10:
        raise ValueError(
            f"the CSV's {len(x):,} reviews are {len(kept)} distinct ones as the model reads them (the last "
            f"{x.shape[1]} tokens of each, rare words as <unk>); give at least 10 that differ there, or read more "
            "of each (a longer sequence, a larger vocabulary)")
    x, y = torch.from_numpy(x[kept]), torch.from_numpy(labels[kept])  # [N, T], [N]
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = max(1, int(len(y) * TEST_SHARE))
    return x[order[n_test:]], y[order[n_test:]], x[order[:n_test]], y[order[:n_test]]


def fixed_split(x: np.ndarray, labels: np.ndarray, held_out: np.ndarray, seed: int) -> tuple[torch.Tensor, ...]:
    """held_out_split for a corpus that names its held-out rows [N] bool: each distinct row once,
    a training row the same as a held-out one (as the model reads it) left out, the training rows
    shuffled by `seed`, the held-out ones in the file's order."""
    test = np.flatnonzero(held_out)[first_of_each(x[held_out])]  # [N_test]
    train = np.flatnonzero(~held_out)[first_of_each(x[~held_out])]  # [distinct training rows]
    seen = {row.tobytes() for row in x[test]}
    train = np.array([i for i in train if x[i].tobytes() not in seen], dtype=np.int64)  # [N_train]
    order = torch.randperm(len(train), generator=torch.Generator().manual_seed(seed)).numpy()
    train = train[order]
    return (torch.from_numpy(x[train]), torch.from_numpy(labels[train]),
            torch.from_numpy(x[test]), torch.from_numpy(labels[test]))


def first_of_each(rows: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct row of rows [N, T], in order."""
    as_bytes = np.ascontiguousarray(rows).view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1])))  # [N, 1]
    _, first = np.unique(as_bytes.ravel(), return_index=True)  # [distinct]
    return np.sort(first)


@dataclass
class ReviewTask(Task):
    """What the word and character sentiment tasks share: a training and a held-out split of
    reviews as the model reads them (train_x, train_y, test_x, test_y, set by a subclass), two
    classes, a coin toss's loss and the bag-of-words baseline on the same split."""

    baseline_name: ClassVar[str] = "bag of words"  # logistic regression on the counts of the tokens read
    token_name: ClassVar[str] = "words"

    @property
    def baseline_loss(self) -> float:
        """Cross-entropy of a coin toss (the labels are close to balanced)."""
        return math.log(2)

    @functools.cached_property
    def baseline_metric(self) -> tuple[str, float]:
        """Bag-of-words held-out accuracy on the very tokens the model reads: 0.1 s on the shipped
        reviews, once per task."""
        accuracy = bag_of_words_accuracy(self.train_x, self.train_y, *self.test_set(), len(self.vocab),
                                         len(CLASS_NAMES), self.spec.pad_id)
        return self.baseline_name, accuracy

    @functools.cached_property
    def median_read(self) -> float:
        """The median of the tokens the model reads of a training review (its last seq_len, pads not counted)."""
        return float((self.train_x != self.spec.pad_id).sum(1).float().median())  # train_x [N, T]

    def sample(self, batch_size, generator):
        rows = torch.randint(0, len(self.train_y), (batch_size,), generator=generator)  # [B]
        return self.train_x[rows].long(), self.train_y[rows]  # [B, T] (embeddings take int64), [B]

    def test_set(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.test_x.long(), self.test_y  # [N_test, T], [N_test]

    @property
    def class_names(self):
        return CLASS_NAMES


@dataclass
class SentimentTask(ReviewTask):
    """Reviews are lower-cased, split into words and mapped to the max_vocab most frequent words
    (others become <unk>). Each is cut to its last seq_len words and padded at the front, so the
    model's last step is always the review's last word. 20% of the reviews are held out.

    corpus: the shipped reviews, "generated" (template sentences where word order decides) or
    "sentences" (real review sentences with a fixed held-out split: shipped_sentences).
    train_reviews: train on only the first this many training reviews (0: all of them; the
    training reviews are shuffled by the seed), the held-out ones unchanged: how far a few
    labelled reviews go.
    csv_text: a `review,sentiment` CSV (text or bytes), or the ParsedReviews that parse_reviews
    made of one (parse once, build many tasks from it); it replaces the corpus.
    """

    seq_len: int = 40
    max_vocab: int = 2000
    corpus: str = "generated"
    train_reviews: int = 0
    csv_text: str | bytes | ParsedReviews | None = None

    help: ClassVar[str] = "positive or negative, word by word (generated reviews, real sentences, or your CSV)"
    corpus_made: ClassVar[tuple[str, ...]] = ("train_x", "train_y", "test_x", "test_y")

    @property
    def public_corpus(self) -> str | None:
        return "sentences" if self.corpus == "sentences" and self.csv_text is None else None
    choices: ClassVar[dict[str, tuple[str, ...]]] = {"corpus": CORPORA}
    preset: ClassVar[Preset] = Preset(
        model=ModelConfig(arch="lstm", hidden_size=64, embedding_dim=32),
        train=TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0),
        steps=800,
        lesson=(
            "The shipped reviews hide their verdict in word order: 'was not good' and 'was good' share "
            "their words, so a bag of words (logistic regression on the words' counts, the dashed line) "
            "gets about 66% of the held-out reviews right. An LSTM reading left to right carries the "
            "'not' to the adjective and passes 95% within 800 steps."
        ),
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seq_len(self.seq_len)
        check_int("max_vocab", self.max_vocab, 3, MAX_WORD_VOCAB)
        check_choice("corpus", self.corpus, CORPORA)
        check_int("train_reviews", self.train_reviews, 0, 10_000_000)
        held_out = None
        if self.csv_text is None and self.corpus == "sentences":
            reviews, held_out = shipped_sentences()
        else:
            reviews = reviews_of(self.csv_text)
        if self.csv_text is not None:  # kept parsed, so a copy with other settings does not parse again
            self.csv_text = reviews
        self.vocab = SPECIALS + reviews.words[: self.max_vocab - 2]
        # A review is kept once as the model sees it: its last seq_len words, rare ones as <unk>.
        x = last_words(reviews, self.seq_len, self.max_vocab)  # [N, T]
        if held_out is None:
            train_x, train_y, self.test_x, self.test_y = held_out_split(x, reviews.labels, self.seed)
        else:
            train_x, train_y, self.test_x, self.test_y = fixed_split(x, reviews.labels, held_out, self.seed)
        self.train_x, self.train_y = train_x[: self.train_reviews or None], train_y[: self.train_reviews or None]
        pad = SPECIALS.index("<pad>")
        self.spec = TaskSpec("sentiment", "seq2vec", "tokens", len(self.vocab), output_size=2, loss="ce", pad_id=pad)

    def encode(self, text: str) -> torch.Tensor:
        """A review typed by the student, as the model sees it: [T] word ids, front-padded."""
        index = {w: i for i, w in enumerate(self.vocab)}
        ids = [index.get(w, 1) for w in words(text)[-self.seq_len :]]
        return torch.tensor([self.spec.pad_id] * (self.seq_len - len(ids)) + ids)  # [T]

    def input_features(self, symbols, x):
        return word_features(symbols, pad=self.pad_symbol)

    def decode(self, ids) -> str:
        return " ".join(self.vocab[int(i)] for i in ids if int(i) != self.spec.pad_id)
