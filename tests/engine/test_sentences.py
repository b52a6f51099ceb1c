"""The real review sentences (engine.datasets' corpus "sentences") as the sentiment task reads them: the
cut's fixed held-out split is the task's whatever the seed, no held-out sentence is also trained on
as the model reads it, the training sentences follow the seed, and `train_reviews` keeps that many."""
import csv
import io

import pytest
import torch

import engine
from engine import datasets
from engine.tasks.text import words

TASK = {"corpus": "sentences", "seq_len": 40, "max_vocab": 5000}


def file_rows() -> list[dict]:
    return list(csv.DictReader(io.StringIO(datasets.corpus_text("sentences"), newline="")))


def as_read(task, rows) -> set[tuple[tuple[int, ...], int]]:
    """Each row as the task's model reads it, with its label: its last seq_len words' ids."""
    index = {w: i for i, w in enumerate(task.vocab)}
    out = set()
    for row in rows:
        ids = [index.get(w, 1) for w in words(row["review"])][-task.seq_len:]
        out.add((tuple([0] * (task.seq_len - len(ids)) + ids), int(row["sentiment"] == "positive")))
    return out


def task_rows(x, y) -> set[tuple[tuple[int, ...], int]]:
    return {(tuple(row.tolist()), int(label)) for row, label in zip(x, y)}


def test_the_held_out_sentences_are_the_files_whatever_the_seed():
    rows = file_rows()
    held = [r for r in rows if r["split"] == "held_out"]
    assert len(rows) == 3000 and len(held) == 600
    for seed in (0, 1):
        task = engine.make_task("sentiment", seed=seed, **TASK)
        assert task_rows(*task.test_set()) == as_read(task, held)  # 596 distinct of the 600
        assert len(task.test_y) == len(as_read(task, held)) == 596


def test_no_held_out_sentence_is_trained_on_and_every_other_one_is():
    rows = file_rows()
    task = engine.make_task("sentiment", seed=0, **TASK)
    train, test = task_rows(task.train_x, task.train_y), task_rows(*task.test_set())
    assert not {x for x, _ in train} & {x for x, _ in test}
    trained_text = as_read(task, [r for r in rows if r["split"] == "train"])
    assert train == {row for row in trained_text if row[0] not in {x for x, _ in test}}
    assert len(task.train_y) == len(train) == 2376


def test_the_seed_shuffles_the_training_sentences_and_train_reviews_keeps_the_first():
    a = engine.make_task("sentiment", seed=0, **TASK)
    b = engine.make_task("sentiment", seed=1, **TASK)
    assert not torch.equal(a.train_x, b.train_x)
    assert task_rows(a.train_x, a.train_y) == task_rows(b.train_x, b.train_y)
    few = engine.make_task("sentiment", seed=1, train_reviews=300, **TASK)
    assert torch.equal(few.train_x, b.train_x[:300]) and torch.equal(few.train_y, b.train_y[:300])
    assert torch.equal(few.test_x, b.test_x)


def test_the_generated_reviews_are_still_the_default():
    assert engine.make_task("sentiment", seed=0).vocab == engine.make_task("sentiment", corpus="generated").vocab
    with pytest.raises(ValueError, match="corpus"):
        engine.make_task("sentiment", corpus="imdb")


def test_the_vocabulary_is_ranked_on_the_training_sentences_alone():
    """Every word a training sentence uses has a slot (ranked on every sentence, 216 of them were <unk> while words
    only held-out sentences use took 598 slots); those come after every training word, and the training words are in
    order of how often the training sentences use them, counted here from the file."""
    from collections import Counter

    counts = Counter(w for row in file_rows() if row["split"] != "held_out" for w in words(row["review"]))
    vocab = engine.make_task("sentiment", seed=0, **TASK).vocab[2:]  # after <pad> and <unk>
    assert set(vocab[: len(counts)]) == set(counts)
    ranked = [counts[w] for w in vocab[: len(counts)]]
    assert ranked == sorted(ranked, reverse=True)
