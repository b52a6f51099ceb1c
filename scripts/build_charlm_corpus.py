"""Build the char-LM corpus shipped in engine/data/: a few of the Python standard library's own
source files, joined by newlines, and a provenance note beside it.

The char-LM task reads this snapshot, never the running interpreter, so its vocabulary, its
lesson's figures and the checkpoints trained on it are the same under every Python version.
Run it only to change the snapshot (a new file list), then update what quotes it:

    python scripts/build_charlm_corpus.py           # write the corpus and its provenance
    python scripts/build_charlm_corpus.py --check   # does this interpreter rebuild it byte for byte?
"""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

from corpus_files import DATA, check, parser, sha256, write

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
- sha256: `{sha256(corpus)}`
- Built by: `python scripts/build_charlm_corpus.py`

## Licence

These files are part of Python, Copyright (c) 2001 Python Software Foundation; All Rights
Reserved. They are redistributed unchanged (only concatenated) under the PSF License Agreement
for Python (PSF-2.0): https://docs.python.org/3/license.html
"""


def main() -> None:
    corpus = build_corpus().encode("utf-8")
    if parser(__doc__).parse_args().check:
        check(CORPUS, corpus, f"what Python {platform.python_version()} rebuilds")
    write(CORPUS, corpus, PROVENANCE, provenance(corpus))


if __name__ == "__main__":
    main()
