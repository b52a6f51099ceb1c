"""What a script that builds a corpus shipped in engine/data/ (the project's own: public corpora are got by
engine.datasets, never shipped) uses: the digest, writing a corpus with its provenance note, and --check.

The scripts import it as a sibling (`from corpus_files import ...`): Python puts a script's own
folder first on sys.path, so `python scripts/build_<name>_corpus.py` finds it from any directory.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import NoReturn

DATA = Path(__file__).resolve().parent.parent / "engine" / "data"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parser(doc: str) -> argparse.ArgumentParser:
    """The scripts' command line: --check."""
    found = argparse.ArgumentParser(description=doc.splitlines()[0])
    found.add_argument("--check", action="store_true", help="compare with the shipped corpus, write nothing")
    return found


def check(shipped: Path, rebuilt: bytes | None, what: str, recorded: str | None = None) -> NoReturn:
    """--check: the shipped file against a rebuild, byte for byte; or, with nothing rebuilt (no
    source given), its sha256 against the recorded one. Prints the verdict; exits 0 if the same, else 1."""
    data = shipped.read_bytes() if shipped.exists() else b""
    if rebuilt is None:
        same = sha256(data) == recorded
        print(f"no source given, so not compared byte for byte: {shipped} "
              f"{'has' if same else 'does NOT have'} the recorded sha256 of {what}")
    else:
        same = data == rebuilt
        print(f"{shipped} {'is' if same else 'is NOT'} {what}, byte for byte")
    sys.exit(0 if same else 1)


def write(corpus_path: Path, corpus: bytes, provenance_path: Path, note: str) -> None:
    """The corpus as bytes (no newline translation on any platform) and its provenance note (UTF-8, LF)."""
    corpus_path.parent.mkdir(exist_ok=True)
    corpus_path.write_bytes(corpus)
    provenance_path.write_text(note, encoding="utf-8", newline="\n")
    print(f"wrote {corpus_path} ({len(corpus):,} bytes, sha256 {sha256(corpus)}) and {provenance_path}")
