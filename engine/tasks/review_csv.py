"""A `review,sentiment` CSV (the Kaggle IMDB 50K layout), read once into an immutable value.

Parsing and tokenising an IMDB-size file takes seconds; building a sentiment task from the
parsed reviews takes a fraction of that. So a page parses an upload once, keyed by its content
(st.cache_data shares it across sessions), and rebuilds the task from it on every setting
change: `SentimentTask(csv_text=parse_reviews(data), seq_len=..., max_vocab=...)`.

Memory: the file is read as a stream, never decoded or copied whole. CHUNK_ROWS reviews at a
time are split into words, and every BATCH_WORDS words are mapped to integer ids through one
growing vocabulary and appended to one int32 array, grown in place. The peak of what a parse
allocates (tracemalloc's, beyond the caller's file) is at most
    PEAK_FIXED + PEAK_PER_WORD x words + PEAK_PER_DISTINCT x distinct words
    + PEAK_PER_CHUNK_CHAR x the characters of the longest CHUNK_ROWS reviews in a row,
the last term about 5 MB for reviews of IMDB's length (its longest has about 14,000 characters).
For IMDB-like text (a word in 5.8 bytes) that is about 1.3 bytes a byte of the file: 90 MB for a
67 MB file, which peaked at 68 MB traced and 75 MB more RSS, where the whole-text parse this
replaced took 1,415 and 1,698 MB (benchmarks/README.md, section 15). At worst (one-letter words,
MAX_CSV_WORDS distinct ones) the bound stays linear in the file: 2.5 bytes a byte, plus 100 MB,
plus the chunk term. tests/engine/test_review_csv_memory.py checks it.
A CSV of more than MAX_CSV_CHARS characters, MAX_CSV_REVIEWS reviews or MAX_CSV_WORDS distinct
words is refused, saying what to change.
"""
from __future__ import annotations

import codecs
import csv
import functools
import hashlib
import io
import itertools
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .text import check_text, word_pieces

LABELS = {"negative": 0, "positive": 1, "0": 0, "1": 1, "neg": 0, "pos": 1}
MAX_CSV_CHARS = 100_000_000  # the IMDB 50K file is about 66 million characters
MAX_CSV_REVIEWS = 100_000  # the IMDB 50K file has 50,000
MAX_CSV_WORDS = 500_000  # distinct words: about 100,000 in the IMDB 50K file; PEAK_PER_DISTINCT bytes each
COLUMNS = ("review", "sentiment")
CHUNK_ROWS = 200  # reviews read at a time: about 260 KB of IMDB text
BATCH_WORDS = 50_000  # words held as str objects before they become ids: about 3 MB
PIECE_CHARS = 100_000  # a longer review is split into words this many characters at a time
HASH_CHARS = 1 << 20  # characters of a str encoded at a time for its digest
# The bound on a parse's peak (the module's docstring), in bytes:
PEAK_FIXED = 8_000_000  # a batch of words, pandas' reader, up to MAX_CSV_REVIEWS reviews' lengths and labels
PEAK_PER_WORD = 5  # its int32 id, and a quarter more while the array grows
PEAK_PER_DISTINCT = 200  # its str, its slot in the dict, its count, its rank and its place in `words`
PEAK_PER_CHUNK_CHAR = 12  # a chunk's reviews as str, a long review's two copies: 4 bytes a character at most
Rows = Iterator[tuple[list[str], np.ndarray]]  # (reviews, labels [n]) a chunk at a time


@dataclass(frozen=True, eq=False)
class ParsedReviews:
    """Every review of a CSV as word ids, and its label; read-only arrays, safe to share.

    words     every distinct word, the most frequent first (ties alphabetically; ranked_on ranks them by
              some rows' counts), so the max_vocab - 2 most frequent are words[:max_vocab - 2]
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

    @functools.cached_property  # 10 ms for IMDB's 100,000 words; frozen, so it never changes
    def nbytes(self) -> int:
        """Bytes it holds: its arrays, and its words as the tuple of str objects they are."""
        arrays = self.word_ids.nbytes + self.starts.nbytes + self.labels.nbytes
        return arrays + sys.getsizeof(self.words) + sum(map(sys.getsizeof, self.words))

    def review(self, i: int) -> list[str]:
        """Review i as the words it was split into."""
        return [self.words[k] for k in self.word_ids[self.starts[i] : self.starts[i + 1]]]


def ranked_on(reviews: ParsedReviews, rows: np.ndarray) -> ParsedReviews:
    """The reviews with their words ranked by how often they occur in the reviews `rows` [N] bool picks alone (the
    training rows: a word only the held-out rows use ranks after every word they use), ties and words those rows never
    use in their old order. The same text and word ids otherwise, renumbered."""
    picked = np.repeat(rows, np.diff(reviews.starts))  # [W]: whether each word of the text is in a picked review
    counts = np.bincount(reviews.word_ids[picked], minlength=len(reviews.words))  # [U]
    order = np.argsort(-counts, kind="stable")  # [U] old ids, most frequent in the picked rows first
    rank = np.empty(len(order), dtype=np.int32)  # [U]
    rank[order] = np.arange(len(order), dtype=np.int32)
    return ParsedReviews(words=tuple(reviews.words[i] for i in order.tolist()), word_ids=rank[reviews.word_ids],
                         starts=reviews.starts, labels=reviews.labels,
                         digest=f"{reviews.digest} ranked on {hashlib.sha256(rows.tobytes()).hexdigest()}")


def parse_reviews(csv_text: str | bytes) -> ParsedReviews:
    """A `review,sentiment` CSV (text or bytes, as uploaded) read and split into words, or a
    ValueError saying what to fix."""
    check_text(csv_text, "CSV file", limit=MAX_CSV_CHARS)
    fingerprint = digest(csv_text)
    try:
        return read_reviews(pandas_rows(open_text(csv_text)), fingerprint)
    except Unreadable:
        pass  # read again past this block, which would keep the first attempt's arrays alive
    return read_reviews(csv_rows(open_text(csv_text)), fingerprint)


class Unreadable(Exception):
    """pandas cannot read the file, or finds a column or a label missing: the csv module reads it
    again to name the problem and its line (a pandas row index is not a line of the file once
    reviews span lines)."""


def read_reviews(rows: Rows, fingerprint: str) -> ParsedReviews:
    """The reviews as their words' ids, a chunk of rows at a time."""
    ids = WordIds()
    lengths, labels, n = [], [], 0
    for reviews, chunk_labels in rows:
        n += len(reviews)
        if n > MAX_CSV_REVIEWS:
            raise ValueError(
                f"the CSV has more than {MAX_CSV_REVIEWS:,} reviews; keep the first {MAX_CSV_REVIEWS:,} "
                "(the IMDB 50K file has 50,000) or split the file"
            )
        lengths.append(ids.add(reviews))  # [n]
        labels.append(chunk_labels)  # [n]
    words, word_ids = ids.ranked()
    return ParsedReviews(
        words=words,
        word_ids=word_ids,  # [W]
        starts=np.cumsum(np.concatenate([[0], *lengths])),  # [N+1]
        labels=np.concatenate([np.empty(0, dtype=np.int64), *labels]),  # [N]
        digest=fingerprint,
    )


class WordIds:
    """Words to int32 ids as the reviews stream past, in order of first appearance, then ranked."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}  # word -> id: the vocabulary so far
        self.ids = np.empty(0, dtype=np.int32)  # [capacity]: the first `size` are the words so far
        self.size = 0
        self.counts = np.zeros(0, dtype=np.int64)  # [U] how often each word came
        self.batch: list[str] = []  # words not yet given ids

    def add(self, reviews: list[str]) -> np.ndarray:
        """[n] the number of words of each review, its words added."""
        lengths = []
        for review in reviews:
            n = 0
            for piece in word_pieces(review, PIECE_CHARS):
                n += len(piece)
                self.batch += piece
                if len(self.batch) >= BATCH_WORDS:
                    self.flush()
            lengths.append(n)
        self.flush()
        return np.array(lengths, dtype=np.int64)  # [n]

    def flush(self) -> None:
        """The batch's words as ids, a word not seen before given the next one."""
        index = self.index
        ids = np.fromiter(map(index.get, self.batch, itertools.repeat(-1)), np.int32, len(self.batch))  # [b]
        new = np.flatnonzero(ids < 0)  # [n]: words without an id when the batch began
        ids[new] = [index.setdefault(self.batch[j], len(index)) for j in new.tolist()]  # a repeat: the first's
        if len(index) > MAX_CSV_WORDS:
            raise ValueError(
                f"the CSV's reviews use more than {MAX_CSV_WORDS:,} distinct words (the IMDB 50K file's use about "
                "100,000); check that the review column holds the reviews' text, or keep fewer reviews"
            )
        end = self.size + len(ids)
        if end > len(self.ids):  # grown in place by a quarter: concatenating batches would hold every id twice
            self.ids.resize(max(end, len(self.ids) * 5 // 4), refcheck=False)
        self.ids[self.size : end] = ids
        self.size = end
        self.counts.resize(len(index), refcheck=False)  # new words' counts start at 0
        np.add.at(self.counts, ids, 1)  # [U]: a batch at a time (bincount over all ids would copy them to int64)
        self.batch = []

    def ranked(self) -> tuple[tuple[str, ...], np.ndarray]:
        """(every word, the most frequent first, ties alphabetically; [W] the ids as ranks among them)."""
        self.ids.resize(self.size, refcheck=False)  # [W]
        words = np.array(list(self.index), dtype=object)  # [U] in id order
        alphabetical = np.argsort(words)  # [U]
        order = alphabetical[np.argsort(-self.counts[alphabetical], kind="stable")]  # [U] by count, ties alphabetically
        rank = np.empty(len(words), dtype=np.int32)  # [U]
        rank[order] = np.arange(len(words))
        for start in range(0, self.size, BATCH_WORDS):  # in place, a block at a time: no second [W] array
            block = self.ids[start : start + BATCH_WORDS]  # [b] a view
            block[:] = rank[block]
        return tuple(words[order]), self.ids


def pandas_rows(text: Iterable[str]) -> Rows:
    """The rows as pandas reads them, CHUNK_ROWS at a time, or Unreadable."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)  # extra fields: ignored, as csv.DictReader does
            # object, not str: Python strings straight from the parser, no Arrow array to convert
            with pd.read_csv(text, dtype=object, na_filter=False, index_col=False, chunksize=CHUNK_ROWS) as chunks:
                for frame in chunks:
                    frame.columns = [str(c).strip().lower() for c in frame.columns]
                    if not frame.columns.is_unique or not set(COLUMNS) <= set(frame.columns):
                        raise Unreadable
                    labels = [LABELS.get(s.strip().lower()) for s in frame["sentiment"].tolist()]  # None: not one
                    if None in labels:
                        raise Unreadable
                    yield frame["review"].tolist(), np.array(labels, dtype=np.int64)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as err:
        raise Unreadable from err


def csv_rows(text: Iterable[str]) -> Rows:
    """The csv module's reading, CHUNK_ROWS rows at a time: slow, but it knows the line each row ends on."""
    try:
        reader = csv.DictReader(text)
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
            if len(reviews) == CHUNK_ROWS:
                yield reviews, np.array(labels, dtype=np.int64)
                reviews, labels = [], []
        yield reviews, np.array(labels, dtype=np.int64)
    except csv.Error as err:
        raise ValueError(
            f"the CSV cannot be read ({err}); a quote that is opened and never closed is the usual "
            "cause: quote each review that contains commas, and double any quote inside it"
        ) from None


def open_text(data: str | bytes) -> Iterable[str]:
    """The CSV's text as a file read a slice at a time, its lines ending at "\\n" only, as
    io.StringIO's did when the whole text was parsed at once: a lone "\\r" stays inside its line."""
    if isinstance(data, bytes):  # BytesIO shares the bytes it is given: no copy
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="\n")
    return TextSlices(data)


class TextSlices:
    """A str read as a file: io.StringIO would copy it, at 4 bytes a character."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def read(self, size: int = -1) -> str:
        end = len(self.text) if size is None or size < 0 else self.at + size
        piece = self.text[self.at : end]
        self.at += len(piece)
        return piece

    def __iter__(self) -> Iterator[str]:
        """Its lines, each with its "\\n", for the csv module."""
        while self.at < len(self.text):
            end = self.text.find("\n", self.at)
            yield self.read(len(self.text) - self.at if end < 0 else end + 1 - self.at)


def digest(data: str | bytes) -> str:
    """sha256 of the text's UTF-8 encoding, a slice at a time. Valid UTF-8 bytes (check_text saw
    they are) are that encoding already, once past a byte-order mark."""
    if isinstance(data, bytes):
        bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
        return hashlib.sha256(memoryview(data)[bom:]).hexdigest()
    hashed = hashlib.sha256()
    for start in range(0, len(data), HASH_CHARS):
        hashed.update(data[start : start + HASH_CHARS].encode())
    return hashed.hexdigest()
