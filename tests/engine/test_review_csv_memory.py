"""parse_reviews reads a review CSV as a stream: the same ParsedReviews as the whole-text parse it
replaced (kept below, small, as the reference), the same messages for a bad file, caps on reviews
and distinct words that say what to change, and a peak of traced memory within the bound its
module states."""
import csv
import hashlib
import io
import itertools
import pickle
import sys
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest

from engine.tasks import review_csv, text
from engine.tasks.review_csv import LABELS, MAX_CSV_CHARS, parse_reviews
from engine.tasks.text import decode_text, words


def whole_text_parse(csv_text: str | bytes) -> tuple:
    """The parse as it was before it streamed (commit a8e36cc), for files it reads: the whole text
    decoded, every review and every word in memory at once, one factorize over all the words.
    (words, word_ids, starts, labels, digest)."""
    data = decode_text(csv_text, "CSV file", limit=MAX_CSV_CHARS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            frame = pd.read_csv(io.StringIO(data), dtype=str, na_filter=False, index_col=False)
        frame.columns = [str(c).strip().lower() for c in frame.columns]
        labels = frame["sentiment"].str.strip().str.lower().map(LABELS)
        if not frame.columns.is_unique or labels.isna().any():
            raise ValueError("the csv module reads it")
        reviews, labels = frame["review"].tolist(), labels.to_numpy(dtype=np.int64)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError, KeyError):
        reader = csv.DictReader(io.StringIO(data))
        reader.fieldnames = [c.strip().lower() for c in reader.fieldnames]
        rows = list(reader)
        reviews = [row["review"] or "" for row in rows]
        labels = np.array([LABELS[row["sentiment"].strip().lower()] for row in rows], dtype=np.int64)
    tokenised = [words(r) for r in reviews]
    codes, uniques = pd.factorize(np.array(list(itertools.chain.from_iterable(tokenised)), dtype=object))
    counts = np.bincount(codes, minlength=len(uniques))
    alphabetical = np.argsort(uniques)
    order = alphabetical[np.argsort(-counts[alphabetical], kind="stable")]
    rank = np.empty(len(uniques), dtype=np.int32)
    rank[order] = np.arange(len(uniques))
    lengths = np.array([len(t) for t in tokenised], dtype=np.int64)
    return (tuple(uniques[order]), rank[codes], np.concatenate([[0], np.cumsum(lengths)]), labels,
            hashlib.sha256(data.encode()).hexdigest())


def written(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def imdb_like(n_reviews: int, seed: int = 0) -> str:
    """IMDB-like reviews: about 230 words each, drawn with Zipf-like frequencies from 40,000 made-up
    words, with commas, full stops and <br /> tags (benchmarks/csv_memory.py writes larger ones)."""
    rng = np.random.default_rng(seed)
    letters = rng.integers(ord("a"), ord("z") + 1, (40_000, 8), dtype=np.uint8)  # [40000, 8]
    letters[np.arange(8) >= 2 + rng.poisson(3, (40_000, 1))] = 0  # NULs end a numpy bytes string early
    vocabulary = rng.permutation(np.unique(letters.view("S8").ravel().astype(str)).astype(object))  # [V] 2-8 letters
    zipf = np.cumsum(1.0 / (np.arange(len(vocabulary)) + 2.7) ** 1.07)
    tails = np.array(["", ",", ".", ".<br /><br />"], dtype=object)
    rows = [["review", "sentiment"]]
    for n in np.maximum(8, rng.lognormal(np.log(230) - 0.28, 0.75, n_reviews)).astype(int):
        picked = (vocabulary[np.searchsorted(zipf, rng.random(n) * zipf[-1])]  # [n]
                  + tails[np.searchsorted([0.87, 0.93, 0.99], rng.random(n))])
        rows.append([" ".join(picked), "positive" if rng.random() < 0.5 else "negative"])
    return written(rows)


CSVS = {
    "spanning lines": written([["review", "sentiment"]] + [
        [f'Line one of r{i % 25},\n"quoted" line two<br />{"rare" + str(i) if i % 4 else ""}' if i % 7 else "",
         "positive" if i % 3 else "negative"] for i in range(40)]),
    "extra columns": written([["id", "Review", "SENTIMENT", "score"]] + [
        [str(i), f"a film, number {i}", "positive" if i % 2 else "negative", "3"] for i in range(30)]),
    "extra fields": "review,sentiment\n" + "".join(f"film {i},positive,extra\nfilm,negative\n" for i in range(9)),
    "label spellings": "review,sentiment\n" + "".join(
        f"review {i},{label}\n" for i, label in enumerate([" POSITIVE", "Neg ", "pos", "0", "1", "Negative"] * 4)),
    "ties": "review,sentiment\nb a c,1\na b,0\nc d,1\nd e e,0\nb,1\nz y x,0\n",
    "scripts": written([["review", "sentiment"], ["Amélie, naïve — 東京 don't 'quoted' l'été", "positive"],
                        ["😀 emoji, DON'T SHOUT<br />über", "negative"], ["", "positive"]]),
    "long reviews": written([["review", "sentiment"]] + [
        ["don't <br />stop; it's <a tag with spaces> now " * (40 + 7 * i) + f"end{i}", "positive"] for i in range(6)]),
    "header only": "review,sentiment\n",
    "duplicate columns": "review,Review,sentiment\nfirst,second,positive\nthird,fourth,negative\n",
    "imdb-like": imdb_like(60),
}


@pytest.fixture(params=["shipped sizes", "tiny chunks"])
def chunking(request, monkeypatch):
    """The module's own chunk sizes, or tiny ones, so that chunks, batches and long reviews' pieces
    end at every kind of place."""
    if request.param == "tiny chunks":
        monkeypatch.setattr(review_csv, "CHUNK_ROWS", 3)
        monkeypatch.setattr(review_csv, "BATCH_WORDS", 5)
        monkeypatch.setattr(review_csv, "PIECE_CHARS", 17)
        monkeypatch.setattr(text, "DECODE_BYTES", 3)  # characters of 2-4 bytes cut across slices
        monkeypatch.setattr(review_csv, "HASH_CHARS", 5)


@pytest.mark.parametrize("encoding", ["str", "bytes", "bytes with a BOM", "CRLF"])
@pytest.mark.parametrize("name", list(CSVS))
def test_the_streaming_parse_gives_what_the_whole_text_parse_gave(name, encoding, chunking):
    content = CSVS[name]
    data = {"str": content, "bytes": content.encode(), "bytes with a BOM": b"\xef\xbb\xbf" + content.encode(),
            "CRLF": content.replace("\n", "\r\n").encode()}[encoding]
    parsed = parse_reviews(data)
    expected = whole_text_parse(data)
    assert parsed.words == expected[0]
    for got, wanted in zip((parsed.word_ids, parsed.starts, parsed.labels), expected[1:4]):
        assert got.dtype == wanted.dtype and np.array_equal(got, wanted)
    assert parsed.digest == expected[4]
    if encoding != "CRLF":  # the same text, however it came: the same data
        assert parsed == parse_reviews(content)


def raises(data, *fragments) -> None:
    with pytest.raises(ValueError) as err:
        parse_reviews(data)
    for fragment in fragments:
        assert fragment in str(err.value)


def test_a_bad_label_far_into_the_file_names_its_line(chunking):
    rows = [["review", "sentiment"]] + [[f"film {i},\nover two lines", "positive"] for i in range(20)]
    rows[16][1] = "great"  # the 16th review, on lines 32 and 33 (the header is line 1)
    raises(written(rows), "line 33: sentiment 'great' is not one of positive/negative")


def test_bytes_that_are_not_utf8_are_named_by_their_place(chunking):
    head = "review,sentiment\nl'été ☂ 😀 à bientôt,positive\n".encode()
    raises(head + b"un film tr\xe8s bon,positive\n", "not UTF-8", f"byte {len(head) + 10} cannot be decoded")
    raises(b"\xef\xbb\xbf" + head + b"\xe2\x98", f"byte {len(head)} cannot be decoded")  # cut short at the end


def test_empty_binary_unclosed_and_too_long_files_say_what_to_fix(monkeypatch):
    for empty in ("", " \n\t", b"", b"\xef\xbb\xbf  \r\n"):
        raises(empty, "the CSV file is empty")
    raises(b"\x00\x01\x02", "columns 'review' and 'sentiment'")
    raises("review,sentiment\nfine,positive\n" + '"never closed,negative\n' + "x" * 140_000, "quote")
    raises(["review,sentiment"], "the CSV file must be text, got list")
    monkeypatch.setattr(review_csv, "MAX_CSV_CHARS", 30)
    raises(("review,sentiment\n" + "été,positive\n" * 2).encode(), "has 43 characters; the limit is 30, so cut it")


def test_more_reviews_than_the_cap_are_refused_saying_what_to_change(monkeypatch):
    assert review_csv.MAX_CSV_REVIEWS >= 50_000  # the IMDB 50K file passes
    monkeypatch.setattr(review_csv, "MAX_CSV_REVIEWS", 450)
    monkeypatch.setattr(review_csv, "CHUNK_ROWS", 200)
    rows = "review,sentiment\n" + "".join(f"film {i},positive\n" for i in range(450))
    assert len(parse_reviews(rows)) == 450
    raises(rows + "one too many,negative\n", "more than 450 reviews; keep the first 450", "split the file")


def test_more_distinct_words_than_the_cap_are_refused(monkeypatch):
    monkeypatch.setattr(review_csv, "MAX_CSV_WORDS", 40)
    rows = "review,sentiment\n" + "".join(f"word{i} word{i + 1} word{i + 2},positive\n" for i in range(38))
    assert len(parse_reviews(rows).words) == 40
    raises(rows + "one more,positive\n", "more than 40 distinct words", "review column")


def test_nbytes_counts_the_arrays_and_the_words():
    parsed = parse_reviews(imdb_like(50))
    arrays = parsed.word_ids.nbytes + parsed.starts.nbytes + parsed.labels.nbytes
    strings = sum(sys.getsizeof(w) for w in parsed.words)
    assert parsed.nbytes == arrays + sys.getsizeof(parsed.words) + strings
    assert strings > 50 * len(parsed.words)  # a str object is about 50 bytes before its characters
    assert pickle.loads(pickle.dumps(parsed)).nbytes == parsed.nbytes


def long_reviews_of_short_words() -> str:
    """1 MB in eight reviews of 48,000 one- and two-letter words: the most words a byte holds, in
    reviews of 120,000 characters, read in pieces."""
    reviews = [" ".join("abcdefg"[i * j % 7] * (1 + j % 2) for j in range(48_000)) for i in range(8)]
    assert min(map(len, reviews)) > review_csv.PIECE_CHARS
    return written([["review", "sentiment"]] + [[review, "1"] for review in reviews])


@pytest.mark.parametrize("name", ["imdb-like, 2 MB", "long reviews of short words, 1 MB"])
def test_the_traced_peak_stays_within_the_stated_bound(name):
    """tracemalloc's peak while parsing stays within the bound review_csv's docstring states: here
    about 19 and 21 MB, of which the streaming parse takes 11. The whole-text parse took 48 and 38."""
    data = imdb_like(1_400) if name.startswith("imdb") else long_reviews_of_short_words()
    chars = np.array([len(row["review"]) for row in csv.DictReader(io.StringIO(data))])  # [N]
    chunk = np.convolve(chars, np.ones(review_csv.CHUNK_ROWS, dtype=int)).max()  # the longest CHUNK_ROWS in a row
    parse_reviews("review,sentiment\nfine,positive\n")  # pandas' lazy imports, not a parse's memory
    tracemalloc.start()
    try:
        parsed = parse_reviews(data.encode())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    bound = (review_csv.PEAK_FIXED + review_csv.PEAK_PER_WORD * len(parsed.word_ids)
             + review_csv.PEAK_PER_DISTINCT * len(parsed.words) + review_csv.PEAK_PER_CHUNK_CHAR * chunk)
    assert peak <= bound, f"{peak / 1e6:.1f} MB traced for {len(data) / 1e6:.1f} MB of CSV, over {bound / 1e6:.1f}"
