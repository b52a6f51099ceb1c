"""The corpus the project makes itself and ships in engine/data/ (the Python standard library's files) is the
file its provenance note records (digest, size, the files it joins); the build scripts' shared code
(scripts/corpus_files.py). Public corpora are not shipped: engine.datasets
gets them (tests/engine/test_datasets.py)."""
import hashlib
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


CHARLM = Corpus("charlm", "charlm_corpus.txt", 78_126, (b"", b""), lambda b: [f"Lib/{f}" for f in b.STDLIB_FILES])


@pytest.mark.parametrize("corpus", [CHARLM], ids=lambda c: c.name)
def test_the_corpus_is_the_file_its_provenance_records(corpus):
    shipped, build, note = corpus.path.read_bytes(), script(corpus.name), corpus.path.with_suffix(".md")
    digest = hashlib.sha256(shipped).hexdigest()
    assert digest == recorded(note, r"sha256: `([0-9a-f]{64})`") == getattr(build, "SHA256", digest)
    assert len(shipped) == figure(note, r"Size: ([\d,]+) bytes") == corpus.size
    assert b"\r" not in shipped
    text = note.read_text(encoding="utf-8")
    pins = corpus.pins(build)
    assert pins and all(pin in text for pin in pins)


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
