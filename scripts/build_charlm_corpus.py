"""Build the char-LM corpus shipped in engine/data/: a few of the Python standard library's own
source files, joined by newlines, and a provenance note beside it.

The char-LM task reads this snapshot, never the running interpreter, so its vocabulary, its
lesson's figures and the checkpoints trained on it are the same under every Python version.
Run it only to change the snapshot (a new file list), then update what quotes it:

    python scripts/build_charlm_corpus.py           # write the corpus and its provenance
    python scripts/build_charlm_corpus.py --check   # does this interpreter rebuild it byte for byte?
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "engine" / "data"
CORPUS = DATA / "charlm_corpus.txt"
PROVENANCE = DATA / "charlm_corpus.md"
# Real code a char-RNN learns to indent, bracket and `def` from; shlex.py brings the Latin-1
# letters of its word characters, so the vocabulary is 158 characters.
STDLIB_FILES = ("textwrap.py", "heapq.py", "bisect.py", "colorsys.py", "fnmatch.py", "shlex.py", "glob.py")


def build_corpus() -> str:
    """The files of this interpreter's standard library, each read as text (universal newlines)
    and joined by one newline."""
    folder = Path(os.__file__).parent
    return "\n".join((folder / name).read_text(encoding="utf-8") for name in STDLIB_FILES)


def provenance(corpus: bytes) -> str:
    return f"""# charlm_corpus.txt

The default corpus of the `charlm` task: a snapshot of {len(STDLIB_FILES)} source files of the Python
standard library, joined by one newline each, in this order:

{chr(10).join(f"- `Lib/{name}`" for name in STDLIB_FILES)}

- Taken from: Python {platform.python_version()} ({sys.implementation.name}), `{sys.version.splitlines()[0]}`
- Size: {len(corpus):,} bytes, UTF-8, {len(set(corpus.decode("utf-8")))} distinct characters
- sha256: `{hashlib.sha256(corpus).hexdigest()}`
- Built by: `python scripts/build_charlm_corpus.py`

## Licence

These files are part of Python, Copyright (c) 2001 Python Software Foundation; All Rights
Reserved. They are redistributed unchanged (only concatenated) under the PSF License Agreement
for Python (PSF-2.0): https://docs.python.org/3/license.html
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped corpus, write nothing")
    corpus = build_corpus().encode("utf-8")
    if parser.parse_args().check:
        same = CORPUS.exists() and CORPUS.read_bytes() == corpus
        print(f"Python {platform.python_version()} {'rebuilds' if same else 'does NOT rebuild'} {CORPUS}")
        sys.exit(0 if same else 1)
    DATA.mkdir(exist_ok=True)
    CORPUS.write_bytes(corpus)  # bytes: no newline translation on any platform
    PROVENANCE.write_text(provenance(corpus), encoding="utf-8", newline="\n")
    print(f"wrote {CORPUS} ({len(corpus):,} bytes) and {PROVENANCE}")


if __name__ == "__main__":
    main()
