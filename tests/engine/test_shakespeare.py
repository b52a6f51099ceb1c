"""Tiny Shakespeare: the shipped file is the one its provenance describes, and the char-LM task
reads it with the file's own characters and never trains on the share it holds out."""
import hashlib
import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch

import engine
from engine.tasks.charlm import char_ids

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "engine" / "data" / "shakespeare.txt"
PROVENANCE = CORPUS.with_suffix(".md")


def script():
    """scripts/build_shakespeare_corpus.py as a module (scripts/ is no package)."""
    path = ROOT / "scripts" / "build_shakespeare_corpus.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded(pattern: str) -> str:
    return re.search(pattern, PROVENANCE.read_text(encoding="utf-8")).group(1)


def test_the_corpus_is_the_file_its_provenance_records():
    shipped, build = CORPUS.read_bytes(), script()
    assert hashlib.sha256(shipped).hexdigest() == recorded(r"sha256: `([0-9a-f]{64})`") == build.SHA256
    assert len(shipped) == int(recorded(r"Size: ([\d,]+) bytes").replace(",", "")) == 1_115_394
    assert len(set(shipped.decode("utf-8"))) == int(recorded(r"Distinct characters: (\d+)")) == 65
    assert build.COMMIT in PROVENANCE.read_text(encoding="utf-8")


@pytest.mark.parametrize("changed", [False, True])
def test_the_build_scripts_check_finds_a_changed_corpus(changed, tmp_path, monkeypatch, capsys):
    """Given no source, --check says it did not compare byte for byte, and still refuses a file
    whose digest is not the source's."""
    build = script()
    copy = tmp_path / "shakespeare.txt"
    copy.write_bytes(CORPUS.read_bytes().replace(b"First Citizen", b"Second Citizen", int(changed)))
    monkeypatch.setattr(build, "CORPUS", copy)
    monkeypatch.setattr(sys, "argv", ["build_shakespeare_corpus.py", "--check"])
    with pytest.raises(SystemExit) as end:
        build.main()
    assert end.value.code == int(changed)
    assert "not compared byte for byte" in capsys.readouterr().out


def test_the_task_reads_the_file_with_its_own_characters():
    text = CORPUS.read_bytes().decode("utf-8")
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=64)
    assert task.vocab == tuple(sorted(set(text)))
    assert task.spec.input_size == task.spec.output_size == 65
    assert task.decode(task.ids) == text  # every character, in order
    x, y = task.batch(8)
    assert x.dtype == y.dtype == torch.int64 and x.shape == y.shape == (8, 64)
    assert torch.equal(x[:, 1:], y[:, :-1])  # y is x one character on


def test_the_held_out_split_is_nanogpts():
    """nanoGPT's prepare.py: the first int(n * 0.9) characters train (it prints 1,003,854), the
    other 111,540 validate; the provenance note quotes where the held-out text starts."""
    task = engine.make_task("charlm", corpus="shakespeare", seq_len=64)
    assert task.train_end == int(len(task.ids) * 0.9) == 1_003_854
    assert len(task.ids) - task.train_end == 111_540
    assert task.train_end == int(recorded(r"from character ([\d,]+) on").replace(",", ""))


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


def test_a_text_of_ones_own_has_no_split():
    task = engine.make_task("charlm", corpus="shakespeare", text="to be or not to be " * 20, seq_len=10)
    assert task.train_end == len(task.ids) == 380


def test_char_ids_index_the_sorted_vocabulary():
    text = "ÿa€b\n a"  # past Latin-1 (€) and at its end (ÿ): a code point each, not a byte
    vocab = tuple(sorted(set(text)))
    ids = char_ids(text, vocab)
    assert ids.dtype == torch.uint8
    assert ids.tolist() == [vocab.index(ch) for ch in text]
