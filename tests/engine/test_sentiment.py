"""The sentiment task: its rows match the CSV they came from (the shipped set, an IMDB-style
upload, awkward files) as a plain row-by-row reading builds them, and a parsed CSV builds the
same task as its text."""
import csv
import dataclasses
import io
import pickle
import re
from collections import Counter

import pytest
import torch

import engine

SHIPPED = engine.tasks.reviews.REVIEWS_CSV


def split_words(text: str) -> tuple[str, ...]:
    """The shipped reviews are lower-case words, commas and full stops."""
    return tuple(text.lower().replace(",", " ").replace(".", " ").split())


def shipped_rows() -> list[tuple[str, str]]:
    with open(SHIPPED, newline="", encoding="utf-8") as f:
        return [(row["review"], row["sentiment"]) for row in csv.DictReader(f)]


def test_shipped_csv_has_both_labels_and_negations():
    rows = shipped_rows()
    assert len(rows) >= 1000
    assert {label for _, label in rows} == {"positive", "negative"}
    positives = sum(label == "positive" for _, label in rows)
    assert 0.3 < positives / len(rows) < 0.7
    one_clause = {text: label for text, label in rows if text.count(".") == 1 and "," not in text}
    negated_praise = [t for t, lab in one_clause.items() if re.search(r" was not (good|great|funny)\.$", t)]
    negated_blame = [t for t, lab in one_clause.items() if re.search(r" was (not|never) (bad|boring|dull)\.$", t)]
    assert negated_praise and all(one_clause[t] == "negative" for t in negated_praise)
    assert negated_blame and all(one_clause[t] == "positive" for t in negated_blame)


def rows_of(task, x):
    """Each row as the tuple of words it shows (front padding dropped)."""
    return [tuple(task.decode(r).split()) for r in x]


def test_sentiment_labels_match_the_csv_and_pad_at_the_front():
    truth: dict[tuple, int] = {}
    for text, label in shipped_rows():
        truth.setdefault(split_words(text), 1 if label == "positive" else 0)
    T = 60  # longer than every shipped review, so no row is cut
    task = engine.make_task("sentiment", seq_len=T, max_vocab=20000, seed=0)
    assert "<unk>" not in " ".join(task.decode(r) for r in task.train_x)
    x = torch.cat([task.train_x, task.test_x])
    y = torch.cat([task.train_y, task.test_y])
    assert len(y) == len(truth)  # every distinct review, once
    for row, words, label in zip(x, rows_of(task, x), y.tolist()):
        assert truth[words] == label
        n_pad = T - len(words)
        assert (row[:n_pad] == 0).all() and (row[n_pad:] != 0).all()  # padding in front only


def test_sentiment_keeps_the_last_words_of_long_reviews():
    endings = {split_words(text)[-5:] for text, _ in shipped_rows()}
    task = engine.make_task("sentiment", seq_len=5, max_vocab=20000)
    assert all(words in endings for words in rows_of(task, task.train_x))
    encoded = task.encode("The film was good")
    assert encoded.tolist()[:1] == [0] and task.decode(encoded) == "the film was good"


def test_sentiment_test_set_is_held_out():
    task = engine.make_task("sentiment", seq_len=60, max_vocab=20000, seed=1)
    test_x, test_y = task.test_set()
    n = len(task.train_y) + len(test_y)
    assert len(test_y) == int(0.2 * n)
    train_rows = {tuple(r.tolist()) for r in task.train_x}
    assert not train_rows & {tuple(r.tolist()) for r in test_x}  # no review on both sides
    x, _ = task.batch(500)
    assert {tuple(r.tolist()) for r in x} <= train_rows  # batches come from training rows only


def imdb_csv(n: int = 30) -> str:
    """The Kaggle IMDB 50K layout: quoted reviews with commas and <br /> tags."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["review", "sentiment"])
    for i in range(n):
        mood = "wonderful, moving" if i % 3 else "dull, tedious"
        writer.writerow([f"Film r{i} was {mood}.<br /><br />I'd say so.", "positive" if i % 3 else "negative"])
    return out.getvalue()


@pytest.mark.parametrize("encode", ["str", "bytes", "bytes-bom", "crlf"])
def test_uploaded_imdb_csv(encode):
    text = imdb_csv().replace("\r\n", "\n")
    data = {
        "str": text,
        "bytes": text.encode("utf-8"),
        "bytes-bom": b"\xef\xbb\xbf" + text.encode("utf-8"),  # what Excel writes
        "crlf": text.replace("\n", "\r\n").encode("utf-8"),
    }[encode]
    task = engine.make_task("sentiment", csv_text=data, seq_len=12, seed=2)
    x = torch.cat([task.train_x, task.test_x])
    y = torch.cat([task.train_y, task.test_y])
    assert len(y) == 30 and len(task.test_y) == 6
    for words, label in zip(rows_of(task, x), y.tolist()):
        i = int(words[1][1:])  # "film r{i} ..."
        assert label == (1 if i % 3 else 0)
        assert words[0] == "film" and words[-2:] == ("say", "so") and "i'd" in words
    reference = engine.make_task("sentiment", csv_text=imdb_csv(), seq_len=12, seed=2)
    assert torch.equal(task.train_x, reference.train_x) and torch.equal(task.test_y, reference.test_y)


def test_uploaded_csv_with_other_label_spellings_and_header_case():
    rows = ["Review,Sentiment"] + [f"review r{i} here,{'1' if i % 2 else 'Neg'}" for i in range(12)]
    task = engine.make_task("sentiment", csv_text="\n".join(rows), seq_len=4)
    x = torch.cat([task.train_x, task.test_x])
    y = torch.cat([task.train_y, task.test_y])
    for words, label in zip(rows_of(task, x), y.tolist()):
        assert label == int(words[1][1:]) % 2


def reference_split(csv_text: str, seq_len: int, max_vocab: int, seed: int):
    """The sentiment task's rows written the plain way, row by row: (vocab, train_x, test_x, train_y, test_y)."""
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    tokenised = [engine.tasks.text.words(row["review"]) for row in rows]
    counts = Counter(w for text in tokenised for w in text)
    vocab = ("<pad>", "<unk>", *sorted(counts, key=lambda w: (-counts[w], w))[: max_vocab - 2])
    index = {w: i for i, w in enumerate(vocab)}
    distinct: dict[tuple, int] = {}
    for text, row in zip(tokenised, rows):
        ids = [index.get(w, 1) for w in text[-seq_len:]]
        distinct.setdefault((0,) * (seq_len - len(ids)) + tuple(ids), 1 if row["sentiment"] == "positive" else 0)
    x, y = torch.tensor(list(distinct)), torch.tensor(list(distinct.values()))
    if len(y) < 10:
        return None  # too few distinct reviews to train on
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = max(1, int(len(y) * 0.2))
    return vocab, x[order[n_test:]], x[order[:n_test]], y[order[n_test:]], y[order[:n_test]]


def awkward_csv() -> str:
    """Reviews over several lines, quotes, tags, empty and repeated reviews, words past the vocabulary."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["review", "sentiment"])
    for i in range(40):
        text = f'Line one of r{i % 25},\n"quoted" line two<br />{"rare" + str(i) if i % 4 else ""}'
        writer.writerow([text if i % 7 else "", "positive" if i % 3 else "negative"])
    return out.getvalue()


@pytest.mark.parametrize("source", ["shipped", "imdb", "awkward"])
@pytest.mark.parametrize("seq_len, max_vocab", [(3, 5), (8, 12), (12, 40), (60, 20000)])
def test_sentiment_rows_match_a_row_by_row_reference(source, seq_len, max_vocab):
    text = {"shipped": SHIPPED.read_text(encoding="utf-8"), "imdb": imdb_csv(60), "awkward": awkward_csv()}[source]
    reference = reference_split(text, seq_len, max_vocab, seed=3)
    if reference is None:
        with pytest.raises(ValueError, match="distinct ones as the model reads them .* give at least 10 that differ"):
            engine.make_task("sentiment", csv_text=text, seq_len=seq_len, max_vocab=max_vocab, seed=3)
        return
    task = engine.make_task("sentiment", csv_text=text, seq_len=seq_len, max_vocab=max_vocab, seed=3)
    vocab, train_x, test_x, train_y, test_y = reference
    assert task.vocab == vocab
    assert torch.equal(task.train_x, train_x) and torch.equal(task.test_x, test_x)
    assert torch.equal(task.train_y, train_y) and torch.equal(task.test_y, test_y)


def test_a_parsed_csv_builds_the_same_task_as_its_text_and_is_read_only():
    parsed = engine.tasks.parse_reviews(imdb_csv(40).encode("utf-8"))
    for seq_len, max_vocab in [(9, 100), (30, 200)]:
        from_text = engine.make_task("sentiment", csv_text=imdb_csv(40), seq_len=seq_len, max_vocab=max_vocab)
        from_parsed = engine.make_task("sentiment", csv_text=parsed, seq_len=seq_len, max_vocab=max_vocab)
        assert from_parsed.vocab == from_text.vocab and from_parsed.csv_text is parsed
        assert torch.equal(from_parsed.train_x, from_text.train_x) and torch.equal(from_parsed.test_y, from_text.test_y)
    assert parsed.review(0) == engine.tasks.text.words(next(csv.DictReader(io.StringIO(imdb_csv(40))))["review"])
    for shared in (parsed, pickle.loads(pickle.dumps(parsed))):  # st.cache_data hands out unpickled copies
        with pytest.raises(ValueError, match="read-only"):
            shared.word_ids[0] = 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.words = ()


def test_a_review_longer_than_the_csv_modules_field_limit_is_read():
    long_review = "a long film " * 12_000  # 144,000 characters: the csv module refuses fields over 131,072
    rows = "review,sentiment\n" + "".join(f"fine film {i},positive\n" for i in range(12))
    parsed = engine.tasks.parse_reviews(rows + f'"{long_review}",negative\n')
    assert len(parsed) == 13 and parsed.review(12) == long_review.split() and parsed.labels[12] == 0


def test_imdb_line_breaks_are_not_words_and_repeats_are_kept_once_as_the_model_sees_them():
    rows = ["review,sentiment"]
    rows += [f'"A fine film.<br /><br />I liked it, number {i}.",positive' for i in range(12)]
    rows += ['"opening words differ, same ending: it was bad",negative',
             '"other start, same ending: it was bad",negative']
    task = engine.make_task("sentiment", seq_len=4, csv_text="\n".join(rows))
    assert "br" not in task.vocab
    seen = [tuple(r.tolist()) for r in torch.cat([task.train_x, task.test_x])]
    assert len(seen) == len(set(seen)) == 13  # the two reviews ending "it was bad" are one row at seq_len 4


def test_words_of_any_script_stay_whole_and_apostrophes_stay_inside_them():
    words = engine.tasks.text.words
    assert words("Amélie was NAÏVE, don't 'quote' it<br />l'été 2001") == [
        "amélie", "was", "naïve", "don't", "quote", "it", "l'été", "2001"]


def test_the_char_task_reads_accented_reviews_without_their_accents():
    rows = ["review,sentiment"] + [f'"Amélie {i} était naïve ★",{"positive" if i % 2 else "negative"}'
                                   for i in range(20)]
    task = engine.make_task("char_sentiment", csv_text="\n".join(rows))
    assert {task.decode(row) for row in task.test_x} <= {f"amelie {i} etait naive" for i in range(20)}


def test_too_few_distinct_reviews_says_how_many_reviews_there_are_and_why_they_collapsed():
    rows = ["review,sentiment"] + [f'"w{i}a w{i}b w{i}c",positive' for i in range(2000)]  # 6,000 distinct words
    with pytest.raises(ValueError, match=r"the CSV.s 2,000 reviews are [1-9] distinct ones as the model reads them"):
        engine.make_task("sentiment", csv_text="\n".join(rows), max_vocab=3)  # every word <unk>


def test_the_last_words_are_read_word_for_word_and_the_rest_copied_no_more():
    """last_words against each review's words read one by one (short reviews padded in front, rare
    words <unk>, empty reviews all <pad>); it copied every word id three times in int64 first (a
    traced peak of 413 MB for 50,000 reviews of ~230 words), now only the words it reads."""
    import tracemalloc

    import numpy as np

    from engine.tasks.review_csv import ParsedReviews
    from engine.tasks.sentiment import SPECIALS, last_words

    rng = np.random.default_rng(0)
    lengths = np.concatenate([[0, 1, 7], rng.integers(0, 400, 500)])  # [N]: reviews longer than read
    reviews = ParsedReviews(tuple(f"w{i}" for i in range(300)), rng.integers(0, 300, lengths.sum()).astype(np.int32),
                            np.concatenate([[0], np.cumsum(lengths)]), rng.integers(0, 2, len(lengths)))
    pad, unk = SPECIALS.index("<pad>"), SPECIALS.index("<unk>")
    for seq_len, max_vocab in ((1, 10), (7, 100), (40, 302)):
        each = (reviews.word_ids[a:b].tolist() for a, b in zip(reviews.starts, reviews.starts[1:]))
        expected = [[pad] * max(0, seq_len - len(words)) + [i + 2 if i < max_vocab - 2 else unk
                                                            for i in words[-seq_len:]] for words in each]
        got = last_words(reviews, seq_len, max_vocab)
        assert got.dtype == np.int64 and got.tolist() == expected
    tracemalloc.start()
    last_words(reviews, 40, 302)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 * len(lengths) * 40 * 8 < 3 * len(reviews.word_ids) * 8  # rows read, not every word id
