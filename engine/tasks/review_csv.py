"""A `review,sentiment` CSV (the Kaggle IMDB 50K layout), read once into an immutable value.

Parsing and tokenising an IMDB-size file takes seconds; building a sentiment task from the
parsed reviews takes a fraction of that. So a page parses an upload once, keyed by its content
(st.cache_data shares it across sessions), and rebuilds the task from it on every setting
change: `SentimentTask(csv_text=parse_reviews(data), seq_len=..., max_vocab=...)`.
"""
from __future__ import annotations

import csv
import hashlib
import io
import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .text import decode_text, words

LABELS = {"negative": 0, "positive": 1, "0": 0, "1": 1, "neg": 0, "pos": 1}
MAX_CSV_CHARS = 100_000_000  # the IMDB 50K file is about 66 million characters
COLUMNS = ("review", "sentiment")


@dataclass(frozen=True, eq=False)
class ParsedReviews:
    """Every review of a CSV as word ids, and its label; read-only arrays, safe to share.

    words     every distinct word, the most frequent first (ties alphabetically), so the
              max_vocab - 2 most frequent are words[:max_vocab - 2]
    word_ids  [W] int32: the words of all reviews end to end, as indices into `words`
    starts    [N+1] int64: review i's words are word_ids[starts[i]:starts[i+1]]
    labels    [N] int64: 0 negative, 1 positive
    """

    words: tuple[str, ...]
    word_ids: np.ndarray
    starts: np.ndarray
    labels: np.ndarray
    digest: str = ""  # sha256 of the CSV's text: two parses of one file are the same data

    def __eq__(self, other) -> bool:
        """Equal when parsed from the same text (the arrays are not compared element by element)."""
        return isinstance(other, ParsedReviews) and bool(self.digest) and self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest) if self.digest else id(self)

    def __post_init__(self) -> None:
        for array in (self.word_ids, self.starts, self.labels):
            array.flags.writeable = False  # shared across sessions: nobody may change it in place

    def __reduce__(self):
        """Unpickled (st.cache_data hands out unpickled copies) through __init__, so read-only again."""
        return ParsedReviews, (self.words, self.word_ids, self.starts, self.labels, self.digest)

    def __repr__(self) -> str:  # a task's repr shows it: a summary, not 40,000 words
        return f"ParsedReviews({len(self)} reviews, {len(self.word_ids)} words, {len(self.words)} distinct)"

    def __len__(self) -> int:
        return len(self.labels)

    def review(self, i: int) -> list[str]:
        """Review i as the words it was split into."""
        return [self.words[k] for k in self.word_ids[self.starts[i] : self.starts[i + 1]]]


def parse_reviews(csv_text: str | bytes) -> ParsedReviews:
    """A `review,sentiment` CSV (text or bytes, as uploaded) read and split into words, or a
    ValueError saying what to fix."""
    text = decode_text(csv_text, "CSV file", limit=MAX_CSV_CHARS)
    reviews, labels = read_rows(text)
    tokenised = [words(r) for r in reviews]
    flat = np.array(list(itertools.chain.from_iterable(tokenised)), dtype=object)  # [W]
    codes, uniques = pd.factorize(flat)  # [W] ids in order of first appearance, [U] words
    counts = np.bincount(codes, minlength=len(uniques))  # [U]
    alphabetical = np.argsort(uniques)  # [U]
    order = alphabetical[np.argsort(-counts[alphabetical], kind="stable")]  # [U] by count, ties alphabetically
    rank = np.empty(len(uniques), dtype=np.int32)  # [U]: int32 halves the largest array of a big upload
    rank[order] = np.arange(len(uniques))
    lengths = np.array([len(t) for t in tokenised], dtype=np.int64)  # [N]
    return ParsedReviews(
        words=tuple(uniques[order]),
        word_ids=rank[codes],  # [W]
        starts=np.concatenate([[0], np.cumsum(lengths)]),  # [N+1]
        labels=labels,
        digest=hashlib.sha256(text.encode()).hexdigest(),
    )


def read_rows(text: str) -> tuple[list[str], np.ndarray]:
    """The reviews and their labels [N]. pandas reads the file; where it cannot, or finds a column
    or a label missing, the csv module reads it again to name the problem and its line (a
    pandas row index is not a line of the file once reviews span lines)."""
    frame = read_frame(text)
    if frame is not None:
        labels = frame["sentiment"].str.strip().str.lower().map(LABELS)  # NaN where not a label
        if not labels.isna().any():
            return frame["review"].tolist(), labels.to_numpy(dtype=np.int64)
    reviews, labels = read_rows_one_by_one(text)
    return reviews, np.array(labels, dtype=np.int64)


def read_frame(text: str) -> pd.DataFrame | None:
    """Columns review and sentiment as text, or None where pandas cannot read them."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)  # extra fields: ignored, as csv.DictReader does
            frame = pd.read_csv(io.StringIO(text), dtype=str, na_filter=False, index_col=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError):
        return None
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    if not frame.columns.is_unique or not set(COLUMNS) <= set(frame.columns):
        return None
    return frame


def read_rows_one_by_one(text: str) -> tuple[list[str], list[int]]:
    """The csv module's reading, row by row: slow, but it knows the line each row ends on."""
    try:
        reader = csv.DictReader(io.StringIO(text))
        columns = [c.strip().lower() for c in (reader.fieldnames or [])]
        if not set(COLUMNS) <= set(columns):
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
    except csv.Error as err:
        raise ValueError(
            f"the CSV cannot be read ({err}); a quote that is opened and never closed is the usual "
            "cause: quote each review that contains commas, and double any quote inside it"
        ) from None
