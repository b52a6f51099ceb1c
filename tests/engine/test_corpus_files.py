"""Every corpus shipped in engine/data/ is the file its provenance note records (digest, size, the
pinned sources), and each build script's --check refuses a changed copy. The scripts' shared code
(scripts/corpus_files.py) on a git repository made here."""
import hashlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.engine.corpus_scripts import ROOT, figure, load, recorded, script

DATA = ROOT / "engine" / "data"


class Corpus(NamedTuple):
    name: str  # scripts/build_<name>_corpus.py
    file: str  # in engine/data/, its note beside it with the suffix .md
    size: int  # bytes, as the note says
    change: tuple[bytes, bytes]  # an edit --check must find
    pins: Callable  # the script module -> the sources its note must name

    @property
    def path(self) -> Path:
        return DATA / self.file


PINNED = [  # corpora read from a pinned git source: --check without a source compares the recorded digest
    Corpus("prose", "prose.txt", 2_456_986, (b"Dashwood", b"Dashwoods"),
           lambda b: [x for book in b.BOOKS for x in (book.commit, book.sha256, book.repository)]),
    Corpus("shakespeare", "shakespeare.txt", 1_115_394, (b"First Citizen", b"Second Citizen"),
           lambda b: [b.COMMIT, b.REPOSITORY, b.PATH]),
    Corpus("sentences", "sentences.csv", 262_680, (b"aimless movie", b"aimless film"),
           lambda b: [b.COMMIT, b.REPOSITORY, *(pinned for file in b.FILES.values() for pinned in file)]),
    Corpus("translation", "eng_fra.tsv", 562_864, (b"Va !", b"Va-t'en !"),
           lambda b: [b.COMMIT, b.REPOSITORY, b.PATH, b.SOURCE_SHA256]),
]
CHARLM = Corpus("charlm", "charlm_corpus.txt", 78_126, (b"", b""), lambda b: [f"Lib/{f}" for f in b.STDLIB_FILES])


@pytest.mark.parametrize("corpus", [*PINNED, CHARLM], ids=lambda c: c.name)
def test_the_corpus_is_the_file_its_provenance_records(corpus):
    shipped, build, note = corpus.path.read_bytes(), script(corpus.name), corpus.path.with_suffix(".md")
    digest = hashlib.sha256(shipped).hexdigest()
    assert digest == recorded(note, r"sha256: `([0-9a-f]{64})`") == getattr(build, "SHA256", digest)
    assert len(shipped) == figure(note, r"Size: ([\d,]+) bytes") == corpus.size
    assert b"\r" not in shipped
    text = note.read_text(encoding="utf-8")
    pins = corpus.pins(build)
    assert pins and all(pin in text for pin in pins)


@pytest.mark.parametrize("changed", [False, True])
@pytest.mark.parametrize("corpus", PINNED, ids=lambda c: c.name)
def test_the_build_scripts_check_finds_a_changed_corpus(corpus, changed, tmp_path, monkeypatch, capsys):
    """Given no source, --check says it did not compare byte for byte, and still refuses a file
    whose digest is not the recorded one."""
    build = script(corpus.name)
    copy = tmp_path / corpus.file
    copy.write_bytes(corpus.path.read_bytes().replace(*corpus.change, int(changed)))
    monkeypatch.setattr(build, "CORPUS", copy)
    monkeypatch.setattr(sys, "argv", [f"build_{corpus.name}_corpus.py", "--check"])
    with pytest.raises(SystemExit) as end:
        build.main()
    assert end.value.code == int(changed)
    assert "not compared byte for byte" in capsys.readouterr().out


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path):
    """A git repository with one file at two commits: (its git directory, first commit, second commit)."""
    folder = tmp_path / "source"
    folder.mkdir()
    git(folder, "init", "-q")
    commits = []
    for text in ("first\n", "second\n"):
        (folder / "data.txt").write_text(text)
        git(folder, "add", "data.txt")
        git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", text.strip())
        commits.append(git(folder, "rev-parse", "HEAD").strip())
    return folder / ".git", *commits


def test_read_pinned_reads_the_file_at_its_commit_and_checks_its_digest(repository, tmp_path):
    files = load("corpus_files")
    git_dir, first, second = repository
    digest = hashlib.sha256(b"first\n").hexdigest()
    assert files.read_pinned([tmp_path / "elsewhere", git_dir], first, "data.txt", digest, "o/r") == b"first\n"
    with pytest.raises(SystemExit, match=f"data.txt at {second[:12]} in .* has sha256 "):
        files.read_pinned([git_dir], second, "data.txt", digest, "o/r")  # the file changed since
    with pytest.raises(SystemExit, match="no --source holds other.txt .*a clone of o/r"):
        files.read_pinned([git_dir], first, "other.txt", digest, "o/r")


@pytest.mark.parametrize("rebuilt", [b"abc\n", b"abd\n", None])
def test_write_then_check(rebuilt, tmp_path, capsys):
    """What write() wrote, check() finds the same against the same bytes or their digest, and not
    against other bytes."""
    files = load("corpus_files")
    corpus, note = tmp_path / "c.txt", tmp_path / "c.md"
    files.write(corpus, b"abc\n", note, "# c.txt\n")
    assert corpus.read_bytes() == b"abc\n" and note.read_bytes() == b"# c.txt\n"
    with pytest.raises(SystemExit) as end:
        files.check(corpus, rebuilt, "the source", files.sha256(b"abc\n"))
    assert end.value.code == int(rebuilt == b"abd\n")
    said = capsys.readouterr().out
    assert ("not compared byte for byte" in said) == (rebuilt is None)
