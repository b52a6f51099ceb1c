"""Build the English prose shipped in engine/data/ for word embeddings: four novels of Jane Austen,
cut out of Project Gutenberg's plain-text files, and a provenance note beside them.

The app and the tests read the shipped copy and never download anything. A developer rebuilds or
checks it from local copies of the four public GITenberg repositories (each a clone's git
directory, or a mirror of it), read at pinned commits by `git show`; each --source is matched to
its book by the commit it holds. The word figures of the note come from the engine's own word rule
(engine/prose.py), so run it from the repository's root:

    PYTHONPATH=. python scripts/build_prose_corpus.py --source A/.git --source B/.git ...           # write
    PYTHONPATH=. python scripts/build_prose_corpus.py --check --source A/.git --source B/.git ...   # compare
    PYTHONPATH=. python scripts/build_prose_corpus.py --check       # no sources: the recorded digest only
"""
from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from corpus_files import DATA, check, parser, read_pinned, sha256, write

from engine.prose import words

CORPUS = DATA / "prose.txt"
PROVENANCE = DATA / "prose.md"


class Book(NamedTuple):
    title: str
    year: int  # of first publication
    repository: str  # on GitHub: GITenberg keeps one repository per Project Gutenberg book
    commit: str  # the repository's master at its last commit (2018-10-20/22): pinned
    path: str  # Project Gutenberg's plain ASCII text, CRLF line ends
    first_line: str  # the book's title line: what comes before it is the volunteers' credits
    sha256: str  # of the file at `commit`


BOOKS = (
    Book("Sense and Sensibility", 1811, "GITenberg/Sense-and-Sensibility_161",
         "1cd7ffed1c21536f6ee2fea4d68c96e2c12ce14c", "161.txt", "SENSE AND SENSIBILITY",
         "9109bd8aabe8f36d0814bd6f5afad1e278b1369d66c0d3846667f0659e119d27"),
    Book("Emma", 1815, "GITenberg/Emma_158",
         "9943f6422b9246e7ad37625d6bd014b035fbfdea", "158.txt", "EMMA",
         "1db38633b6135805b4ca4b874ec5ced5be608ac3c3138cdae6019fc346d633a2"),
    Book("Northanger Abbey", 1817, "GITenberg/Northanger-Abbey_121",
         "c1b554e6d17c67d26b4fbd4bcc92d7eb4f27b2e7", "121.txt", "NORTHANGER ABBEY",
         "64d01d2b7fcf2fb2ce095e857ec2adb0867ee1b25df2fbe1e3a6aa9b6e244c68"),
    Book("Persuasion", 1817, "GITenberg/Persuasion_105",
         "d408e95fc4098953e8dd8eb7cac6023802cb54f4", "105.txt", "Persuasion",
         "a773a0205cc090d3844408b157831a29263cc5207630c3a66b768216085ed91b"),
)
START = "*** START OF THIS PROJECT GUTENBERG EBOOK"  # the header ends on this line
END = "End of the Project Gutenberg EBook"  # the footer (and its licence) starts on this line
SEPARATOR = "\n\n\n\n"  # between two books: three blank lines, as between chapters
SHA256 = "660c0449d1bc386ce369a229fa2c3c80d3ae6fe384a9f0e53424a3b46ef459e4"  # of the shipped prose.txt


def read_book(book: Book, git_dirs: list[Path]) -> bytes:
    """The book's file at its commit, from whichever git directory holds it, or SystemExit."""
    return read_pinned(git_dirs, book.commit, book.path, book.sha256, book.repository)


def cut(book: Book, source: bytes) -> str:
    """The book's own text: the lines after Project Gutenberg's header and the volunteers' credits
    (from the title line on), before its footer and licence; LF line ends, no blank lines at either end."""
    lines = source.decode("ascii").replace("\r\n", "\n").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(START))
    title = next(i for i in range(start, len(lines)) if lines[i].strip() == book.first_line)
    end = next(i for i in range(title, len(lines)) if lines[i].startswith(END))
    text = "\n".join(lines[title:end]).strip("\n")
    if "gutenberg" in text.lower():
        sys.exit(f"{book.title} still names Project Gutenberg after the cut: look at its markers")
    return text


def build(git_dirs: list[Path]) -> list[str]:
    """Each book's cut, in BOOKS' order."""
    return [cut(book, read_book(book, git_dirs)) for book in BOOKS]


def joined(books: list[str]) -> bytes:
    return (SEPARATOR.join(books) + "\n").encode("ascii")


def figures(books: list[str], text: str) -> str:
    """One line a book, then the whole: characters, words and distinct words by engine.prose.words."""
    rows = []
    for book, part in zip(BOOKS, books):
        found = words(part)
        rows.append(f"| {book.title} | {book.year} | {len(part):,} | {len(found):,} | {len(set(found)):,} |")
    found = Counter(words(text))
    rows.append(f"| all four | | {len(text):,} | {found.total():,} | {len(found):,} |")
    return "\n".join(rows)


def provenance(books: list[str]) -> str:
    corpus = joined(books)
    text = corpus.decode("ascii")
    counts = Counter(words(text))
    sources = "\n".join(
        f"- *{b.title}* ({b.year}): `{b.path}` of `{b.repository}` at commit `{b.commit}` (sha256 `{b.sha256}`): "
        f"https://github.com/{b.repository}/blob/{b.commit}/{b.path}" for b in BOOKS)
    return f"""# prose.txt

English prose for word embeddings (word2vec on the Embeddings page): four novels of Jane Austen
(1775-1817), the whole of each, in order of publication, separated by three blank lines.

{sources}

Each file is Project Gutenberg's plain ASCII text of the book, as the GITenberg project keeps it
(one GitHub repository a Project Gutenberg book, its master pinned here at its last commit).

## How it was cut

- Kept: from the book's title line (`{"`, `".join(b.first_line for b in BOOKS)}`)
  to the line before `{END} of ...`.
- Dropped: Project Gutenberg's header (title, release date, the line
  `{START} ...`), the volunteers' credits before the title line, and the
  footer from the `End of` line on (the end marker and the full Project Gutenberg licence). No line
  of what is kept names Project Gutenberg (the build checks it).
- Otherwise unchanged: CRLF line ends made LF, blank lines at either end of a book removed. The
  text keeps its case, punctuation, line breaks and Gutenberg's `_underscores_` for italics.
- Not lower-cased or tokenised on disk: the engine cuts words when it reads the file
  (`engine.prose.words`): the text lower-cased, a word is a run of letters a-z with an apostrophe
  allowed inside it (`don't`, `emma's`); digits, punctuation, underscores and the double dash
  `--` separate words. The figures below are counted that way.
- Size: {len(corpus):,} bytes, ASCII, {text.count(chr(10)):,} lines; {counts.total():,} words, {len(counts):,}
  distinct; {sum(1 for c in counts.values() if c >= 5):,} words occur at least 5 times (word2vec's
  vocabulary at its default min_count)
- sha256: `{sha256(corpus)}`
- Built by: `PYTHONPATH=. python scripts/build_prose_corpus.py --source <git directory> ...`, one
  `--source` a repository above; with `--check` it compares the shipped file with the sources' cut
  byte for byte (or, given no source, checks the recorded sha256)

| book | published | characters | words | distinct words |
| --- | ---: | ---: | ---: | ---: |
{figures(books, text)}

## Licence

The novels were published 1811-1817, their author died in 1817: the text is in the public domain.
GITenberg's metadata for each of these four repositories says "rights: Public domain in the USA."
Project Gutenberg's licence (section 1.C) claims nothing against copying a public-domain work
"as long as all references to Project Gutenberg are removed", which is why its header, footer and
licence are cut off; what remains is the books' text alone.
"""


def main() -> None:
    commands = parser(__doc__, "the git directory of a local clone of one of the books' repositories (repeat it)",
                      many=True)
    args = commands.parse_args()
    if args.check:
        rebuilt = joined(build(args.source)) if args.source else None
        check(CORPUS, rebuilt, "the four books' cut" + (" from the sources" if args.source else ""), SHA256)
    if not args.source:
        commands.error("give --source for each book's repository: " + ", ".join(b.repository for b in BOOKS))
    books = build(args.source)
    write(CORPUS, joined(books), PROVENANCE, provenance(books))


if __name__ == "__main__":
    main()
