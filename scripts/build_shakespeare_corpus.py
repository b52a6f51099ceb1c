"""Build the Tiny Shakespeare corpus shipped in engine/data/: char-rnn's file, unchanged, and a
provenance note beside it.

The app and the tests read the shipped copy and never download anything. A developer rebuilds or
checks it from a local copy of the public repository karpathy/char-rnn (a clone's git directory,
or a mirror of it), read at the pinned commit by `git show`:

    python scripts/build_shakespeare_corpus.py --source ~/char-rnn/.git          # write corpus and provenance
    python scripts/build_shakespeare_corpus.py --check --source ~/char-rnn/.git  # the source's bytes exactly?
    python scripts/build_shakespeare_corpus.py --check                           # no source: the digest only
"""
from __future__ import annotations

from pathlib import Path

from corpus_files import DATA, check, parser, read_pinned, sha256, write

CORPUS = DATA / "shakespeare.txt"
PROVENANCE = DATA / "shakespeare.md"
REPOSITORY = "karpathy/char-rnn"
PATH = "data/tinyshakespeare/input.txt"
# The repository's master at its last commit (2016-04-30); the file is unchanged since its first
# commit (370cbcd, 2015-05-21). Pinned, so a rebuild reads these bytes whatever master becomes.
COMMIT = "6f9487a6fe5b420b7ca9afb0d7c078e37c1d1b4e"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"  # of the file at COMMIT


def read_source(git_dir: Path) -> bytes:
    """The file at COMMIT from a local git directory, or SystemExit saying what is wrong."""
    return read_pinned([git_dir], COMMIT, PATH, SHA256, REPOSITORY)


def provenance(corpus: bytes) -> str:
    text = corpus.decode("utf-8")
    lines, held_out = corpus.count(b"\n"), int(len(text) * 0.9)  # nanoGPT's split: int(n * 0.9)
    return f"""# shakespeare.txt

Tiny Shakespeare, the corpus of char-rnn (Karpathy 2015) and of nanoGPT's `shakespeare_char`: the
`shakespeare` corpus of the `charlm` task. Its Readme calls it "a subset of works of Shakespeare":
speeches from the plays, each headed by its speaker's name and a colon, separated by blank lines.

- Source: the file `{PATH}` of the public GitHub repository `{REPOSITORY}` at commit
  `{COMMIT}`: https://github.com/{REPOSITORY}/blob/{COMMIT}/{PATH}
- How it was cut: not at all. The file is shipped unchanged, byte for byte
- Size: {len(corpus):,} bytes, {len(text):,} characters ({"ASCII" if corpus.isascii() else "UTF-8"}), {lines:,} lines
- Distinct characters: {len(set(text))}
- sha256: `{sha256(corpus)}`
- Built by: `python scripts/build_shakespeare_corpus.py --source <the git directory of a clone of
  {REPOSITORY}>`; with `--check` it compares the shipped file with the source's byte for byte

The task holds out its last 10% (from character {held_out:,} on), as nanoGPT's
`data/shakespeare_char/prepare.py` splits it: first 90% train, last 10% validation.

## Licence

The text is William Shakespeare's (1564-1616) and is in the public domain. The repository it is
taken from is under the MIT licence (its Readme: "License: MIT"); the file is redistributed here
unchanged, with its source named above.
"""


def main() -> None:
    commands = parser(__doc__, f"the git directory of a local clone of {REPOSITORY}")
    args = commands.parse_args()
    if args.check:
        rebuilt = None if args.source is None else read_source(args.source)
        what = f"{PATH} at {COMMIT[:12]}" + ("" if args.source is None else f" from {args.source}")
        check(CORPUS, rebuilt, what, SHA256)
    if args.source is None:
        commands.error(f"give --source: the git directory of a local clone of {REPOSITORY}")
    corpus = read_source(args.source)
    write(CORPUS, corpus, PROVENANCE, provenance(corpus))


if __name__ == "__main__":
    main()
