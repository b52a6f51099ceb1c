"""Tiny Shakespeare, as engine.datasets finds it (the tests' mirror: ../shared/data): the char-LM task
reads it with the file's own characters and never trains on the share it holds out."""
import torch

import engine
from engine import datasets
from engine.tasks.charlm import char_ids


def test_the_file_has_its_65_characters():
    text = datasets.corpus_text("shakespeare")
    assert len(text) == 1_115_394 and len(set(text)) == 65 and text.startswith("First Citizen:\n")


def test_the_task_reads_the_file_with_its_own_characters():
    text = datasets.corpus_text("shakespeare")
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=64)
    assert task.vocab == tuple(sorted(set(text)))
    assert task.spec.input_size == task.spec.output_size == 65
    assert task.decode(task.ids) == text  # every character, in order
    x, y = task.batch(8)
    assert x.dtype == y.dtype == torch.int64 and x.shape == y.shape == (8, 64)
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is x one character on


def test_the_held_out_split_is_nanogpts():
    """nanoGPT's prepare.py: the first int(n * 0.9) characters train (it prints 1,003,854), the
    other 111,540 validate."""
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=64)
    assert task.train_end == int(len(task.ids) * 0.9) == 1_003_854
    assert len(task.ids) - task.train_end == 111_540


def test_training_windows_never_reach_the_held_out_text():
    """Held-out characters marked with an id no character has: no training window holds one, over
    windows at random and at the last start the generator can give."""
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=200, seed=3)
    task.ids = task.ids.clone()
    task.ids[int(len(task.ids) * 0.9) :] = 255  # [N]: nanoGPT's validation text
    x, y = task.batch(2000)
    assert (x != 255).all() and (y != 255).all()


def test_the_last_training_window_ends_on_the_last_training_character(monkeypatch):
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=100)
    monkeypatch.setattr(torch, "randint", lambda low, high, size, generator: torch.full(size, high - 1))
    x, y = task.batch(1)
    last = task.ids[task.train_end - 101 : task.train_end].long()  # [T+1]
    assert torch.equal(x[0], last[:-1]) and torch.equal(y[0], last[1:])


def test_a_text_of_ones_own_holds_out_its_own_last_tenth():
    """The text replaces the corpus, and is cut as Tiny Shakespeare is: int(n * 0.9)."""
    task = engine.make_task("charlm", corpus="shakespeare", text="to be or not to be " * 20, seq_len=10)
    assert len(task.ids) == 380 and task.train_end == 342 and task.holds_out


def test_char_ids_index_the_sorted_vocabulary():
    text = "ÿa€b\n a"  # past Latin-1 (€) and at its end (ÿ): a code point each, not a byte
    vocab = tuple(sorted(set(text)))
    ids = char_ids(text, vocab)
    assert ids.dtype == torch.uint8
    assert ids.tolist() == [vocab.index(ch) for ch in text]
