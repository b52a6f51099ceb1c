"""The char LM's held-out text (issue 30): Tiny Shakespeare's and an uploaded text's last 10%, in
windows the task gives (CharLMTask.held_out_windows) to the lab's held-out curve and the cards;
an upload's vocabulary from the whole file; and a message saying what to change for an empty,
binary, non-UTF-8 or too-short file."""
import random

import pytest
import torch

import engine
from engine.tasks.charlm import shortest_split_text

from .test_validation import raises_saying


def random_text(n: int, seed: int = 0) -> str:
    """n letters at random: any window of 20 or more occurs once, so a window read back names
    where it came from."""
    rng = random.Random(seed)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz \n") for _ in range(n))


def read_back(task, x: torch.Tensor, y: torch.Tensor) -> list[str]:
    """Each window's characters: the ones read, then the last one predicted (y is x one on)."""
    assert torch.equal(x[:, 1:], y[:, :-1])
    return [task.decode(torch.cat([a, b[-1:]])) for a, b in zip(x, y)]


def test_shakespeares_held_out_windows_lie_end_to_end_over_its_last_tenth():
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=100)
    x, y = task.held_out_windows()  # [W, T]
    assert task.train_end == int(len(task.ids) * 0.9) == 1_003_854
    assert len(x) == (111_540 - 1) // 100  # every whole window of T + 1 characters, end to end
    assert torch.equal(x.flatten(), task.ids[task.train_end : task.train_end + x.numel()].long())
    assert torch.equal(y.flatten(), task.ids[task.train_end + 1 : task.train_end + 1 + y.numel()].long())


def test_a_seeded_subset_of_held_out_windows_is_distinct_windows_of_the_tail_the_same_for_a_seed():
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=100)
    starts = task.held_out_starts(102, torch.Generator().manual_seed(7))  # [102]
    assert len(set(starts.tolist())) == 102 and (starts >= task.train_end).all()
    assert (starts <= len(task.ids) - 101).all()  # each window's last target is a character of the text
    x, y = task.held_out_windows(102, torch.Generator().manual_seed(7))
    for s, a, b in zip(starts.tolist(), x, y):
        assert torch.equal(a, task.ids[s : s + 100].long()) and torch.equal(b, task.ids[s + 1 : s + 101].long())
    other = task.held_out_starts(102, torch.Generator().manual_seed(8))
    assert not torch.equal(starts, other)


def test_an_uploaded_text_holds_out_its_last_tenth_and_its_windows_read_back_from_there():
    text = random_text(2_000)
    task = engine.make_task("charlm", text=text.encode("utf-8"), seq_len=32)
    tail = text[int(len(text) * 0.9) :]  # the file's last 10%: 200 characters
    assert task.train_end == 1_800 and task.decode(task.ids[task.train_end :]) == tail
    every = read_back(task, *task.held_out_windows())
    assert every == [tail[i : i + 33] for i in range(0, 200 - 33 + 1, 32)]
    for window in read_back(task, *task.held_out_windows(50, torch.Generator().manual_seed(0))):
        assert text.find(window) >= 1_800 and window in tail
    for window in read_back(task, *task.batch(200)):  # and training never reads them
        assert text.find(window) + 33 <= 1_800


def test_an_uploaded_texts_vocabulary_is_the_whole_files_held_out_part_included():
    text = "ab" * 500 + "Z!"  # Z and ! occur only in the last 10%
    task = engine.make_task("charlm", text=text, seq_len=10)
    assert task.vocab == ("!", "Z", "a", "b") and task.decode(task.ids) == text


def test_the_shipped_python_and_reviews_corpora_hold_nothing_out_in_the_task():
    for corpus in ("python", "reviews"):
        task = engine.make_task("charlm", corpus=corpus, seq_len=50)
        assert not task.holds_out and task.train_end == len(task.ids)
        raises_saying(task.held_out_windows, "holds no text out", corpus)


@pytest.mark.parametrize("text, fragments", [
    (b"", ["corpus is empty", "give it some text"]),
    (b" \n\t\n", ["corpus is empty"]),
    ("café au lait ".encode("latin-1") * 100, ["not UTF-8", "byte 3", "save it as UTF-8"]),
    (bytes(range(256)) * 8, ["not UTF-8", "byte 128", "save it as UTF-8"]),  # a binary file
    (b"\x89PNG\r\n\x1a\n" + bytes(2000), ["not UTF-8", "byte 0"]),  # an image
    (bytes(range(128)) * 16, ["NUL character", "binary file", "save it as UTF-8 text"]),  # binary, yet UTF-8
    ("hello world ".encode("utf-16-le") * 100, ["NUL character", "UTF-16"]),  # UTF-16 without its byte-order mark
], ids=["empty", "blank", "latin-1", "binary", "png", "binary-ascii", "utf-16-no-bom"])
def test_an_unreadable_upload_says_why_and_what_to_change(text, fragments):
    raises_saying(lambda: engine.make_task("charlm", text=text, seq_len=10), *fragments)


@pytest.mark.parametrize("seq_len, shortest", [(100, 1_001), (32, 321), (2, 21)])
def test_a_too_short_upload_names_the_shortest_text_and_the_longest_seq_len_and_both_are_right(seq_len, shortest):
    """One character short of the shortest text is refused with the length it needs and the
    longest seq_len that fits what was given; the shortest text trains and holds out a window;
    the seq_len the message offers is accepted and one more is not."""
    assert shortest_split_text(seq_len, 0.9) == shortest
    text = random_text(shortest)
    task = engine.make_task("charlm", text=text, seq_len=seq_len)
    assert len(task.held_out_windows()[0]) == 1 and task.batch(4)[0].shape == (4, seq_len)
    message = raises_saying(lambda: engine.make_task("charlm", text=text[:-1], seq_len=seq_len),
                            f"has {shortest - 1:,} characters", f"seq_len + 1 = {seq_len + 1}", "last 10%",
                            f"at least {shortest:,} characters", "give more text")
    if seq_len == 2:
        assert "even the shortest seq_len, 2, needs 21 characters" in message
        return
    offered = int(message.split("shorten seq_len to at most ")[1])
    engine.make_task("charlm", text=text[:-1], seq_len=offered)
    raises_saying(lambda: engine.make_task("charlm", text=text[:-1], seq_len=offered + 1), "at least")
