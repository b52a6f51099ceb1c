"""The shipped prose: the file is the one its provenance records, cut as it says (no Project
Gutenberg text left), and the note's word figures are the engine's own word rule's."""
import hashlib
import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.prose import PROSE, prose_words, words

ROOT = Path(__file__).resolve().parents[2]
PROVENANCE = PROSE.with_suffix(".md")


def script():
    """scripts/build_prose_corpus.py as a module (scripts/ is no package)."""
    path = ROOT / "scripts" / "build_prose_corpus.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded(pattern: str) -> str:
    return re.search(pattern, PROVENANCE.read_text(encoding="utf-8")).group(1)


def figure(pattern: str) -> int:
    return int(recorded(pattern).replace(",", ""))


def test_the_prose_is_the_file_its_provenance_records():
    shipped, build = PROSE.read_bytes(), script()
    assert hashlib.sha256(shipped).hexdigest() == recorded(r"sha256: `([0-9a-f]{64})`\n") == build.SHA256
    assert len(shipped) == figure(r"Size: ([\d,]+) bytes") == 2_456_986
    assert shipped.isascii() and b"\r" not in shipped
    note = PROVENANCE.read_text(encoding="utf-8")
    for book in build.BOOKS:
        assert book.commit in note and book.sha256 in note and book.repository in note


def test_the_notes_word_figures_are_the_engines_words():
    counted = Counter(prose_words())
    assert counted.total() == figure(r"; ([\d,]+) words, ") == 442_256
    assert len(counted) == figure(r"words, ([\d,]+)\s+distinct") == 11_780
    assert sum(n >= 5 for n in counted.values()) == figure(r"distinct; ([\d,]+) words occur at least 5 times")


def test_no_project_gutenberg_text_is_left():
    """The licence asks for every reference to Project Gutenberg to go with its header and footer."""
    text = PROSE.read_text(encoding="ascii")
    assert "gutenberg" not in text.lower() and "ebook" not in text.lower()
    assert text.startswith("SENSE AND SENSIBILITY\n") and text.endswith("Finis\n")
    for title in ("EMMA", "NORTHANGER ABBEY", "Persuasion"):
        assert f"\n\n\n\n{title}\n" in text  # each book starts on its title line after three blank lines


def test_words_are_lower_case_letters_with_inner_apostrophes():
    assert words("Mr. Knightley's _very_ kind--don't you think? 'Tis 1811.") == \
        ["mr", "knightley's", "very", "kind", "don't", "you", "think", "tis"]


@pytest.mark.parametrize("changed", [False, True])
def test_the_build_scripts_check_finds_a_changed_corpus(changed, tmp_path, monkeypatch, capsys):
    """Given no source, --check says it did not compare byte for byte, and still refuses a file
    whose digest is not the recorded one."""
    build = script()
    copy = tmp_path / "prose.txt"
    copy.write_bytes(PROSE.read_bytes().replace(b"Dashwood", b"Dashwoods", int(changed)))
    monkeypatch.setattr(build, "CORPUS", copy)
    monkeypatch.setattr(sys, "argv", ["build_prose_corpus.py", "--check"])
    with pytest.raises(SystemExit) as end:
        build.main()
    assert end.value.code == int(changed)
    assert "not compared byte for byte" in capsys.readouterr().out


def test_the_cut_keeps_the_book_between_the_markers():
    """The cut on a made-up file in Gutenberg's layout: header, credits, title, text, footer."""
    build = script()
    book = build.BOOKS[0]._replace(first_line="A TALE")
    source = (f"The Project Gutenberg EBook of A Tale\r\n\r\n{build.START} A TALE ***\r\n\r\nProduced by someone\r\n"
              f"\r\nA TALE\r\n\r\nOnce upon a time.\r\n\r\n\r\n{build.END} of A Tale\r\n\r\nlicence\r\n").encode()
    assert build.cut(book, source) == "A TALE\n\nOnce upon a time."
