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

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "engine" / "data"
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
    found = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{COMMIT}:{PATH}"], capture_output=True)
    if found.returncode:
        sys.exit(f"{git_dir} has no {PATH} at {COMMIT[:12]} ({found.stderr.decode().strip()}); "
                 f"give the git directory of a clone of {REPOSITORY}")
    if sha256(found.stdout) != SHA256:
        sys.exit(f"{PATH} at {COMMIT[:12]} in {git_dir} has sha256 {sha256(found.stdout)}, not {SHA256}")
    return found.stdout


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help=f"the git directory of a local clone of {REPOSITORY}")
    parser.add_argument("--check", action="store_true", help="compare with the shipped corpus, write nothing")
    args = parser.parse_args()
    if args.check:
        shipped = CORPUS.read_bytes() if CORPUS.exists() else b""
        if args.source is None:
            same = sha256(shipped) == SHA256
            print(f"no source given, so not compared byte for byte: {CORPUS} "
                  f"{'has' if same else 'does NOT have'} the recorded sha256 of {PATH} at {COMMIT[:12]}")
        else:
            same = shipped == read_source(args.source)
            print(f"{CORPUS} {'is' if same else 'is NOT'} {PATH} at {COMMIT[:12]} from {args.source}, byte for byte")
        sys.exit(0 if same else 1)
    if args.source is None:
        parser.error(f"give --source: the git directory of a local clone of {REPOSITORY}")
    corpus = read_source(args.source)
    DATA.mkdir(exist_ok=True)
    CORPUS.write_bytes(corpus)  # bytes: no newline translation on any platform
    PROVENANCE.write_text(provenance(corpus), encoding="utf-8", newline="\n")
    print(f"wrote {CORPUS} ({len(corpus):,} bytes) and {PROVENANCE}")


if __name__ == "__main__":
    main()
