"""Build the English-French sentence pairs shipped in engine/data/ for the translate task: Tatoeba's
pairs with the attribution each carries, cut to short sentences, and a provenance note beside them.

The app and the tests read the shipped copy and never download anything. A developer rebuilds or
checks it from a local copy of the public repository NJUxlj/seq2seq-attention-translation (a
clone's git directory, or a mirror of it), read at the pinned commit by `git show`. The note's
figures come from the engine's own word rule and split (engine/tasks/translate.py), so run it from
the repository's root:

    PYTHONPATH=. python scripts/build_translation_corpus.py --source ~/seq2seq-attention-translation/.git
    PYTHONPATH=. python scripts/build_translation_corpus.py --check --source ~/seq2seq-attention-translation/.git
    PYTHONPATH=. python scripts/build_translation_corpus.py --check       # no source: the recorded digest only
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from corpus_files import DATA, check, parser, read_pinned, sha256, write

from engine.tasks.translate import Pair, TranslateTask, read_pairs, tokens, words

CORPUS = DATA / "eng_fra.tsv"
PROVENANCE = DATA / "eng_fra.md"
REPOSITORY = "NJUxlj/seq2seq-attention-translation"
PATH = "data/eng-fra.txt"
# The repository's main at its last commit (2025-01-08); the file is unchanged since it was added
# (7aa6f6b, 2025-01-07). Pinned, so a rebuild reads these bytes whatever main becomes.
COMMIT = "b20755b1c81f2d82526ab967dbc8ec6465f22f14"
SOURCE_SHA256 = "d952b56a181da5270b7bb4ded3f3bbe61e67a9b1de0e0fbc1d46438c71fb55a7"  # of the file at COMMIT
SHA256 = "d952b56a181da5270b7bb4ded3f3bbe61e67a9b1de0e0fbc1d46438c71fb55a7"  # of the shipped eng_fra.tsv
MAX_WORDS = 10  # a side, as the PyTorch and TensorFlow NMT tutorials cut their pairs
# What Tatoeba's CC-BY 2.0 FR licence asks every pair to keep: both sentences' numbers and authors.
ATTRIBUTION = re.compile(r"CC-BY 2\.0 \(France\) Attribution: tatoeba\.org #\d+ \([^)]+\) & #\d+ \([^)]+\)")


def read_source(git_dir: Path) -> bytes:
    """The file at COMMIT from a local git directory, or SystemExit saying what is wrong."""
    return read_pinned([git_dir], COMMIT, PATH, SOURCE_SHA256, REPOSITORY)


def short(pair: Pair) -> bool:
    return all(1 <= len(words(side)) <= MAX_WORDS for side in (pair.english, pair.french))


def cut(source: bytes) -> bytes:
    """The source's pairs of 1 to MAX_WORDS words a side, each line unchanged (its attribution
    with it), in the source's order, LF line ends; SystemExit at a line without its attribution."""
    pairs = read_pairs(source.decode("utf-8"))
    for number, pair in enumerate(pairs, 1):
        if not ATTRIBUTION.fullmatch(pair.attribution):
            sys.exit(f"line {number} of {PATH} has no Tatoeba attribution: {pair.attribution!r}")
    return "".join("\t".join(p) + "\n" for p in pairs if short(p)).encode("utf-8")


def figures(pairs: list[Pair]) -> dict[str, str]:
    """The note's counts, each formatted, by the engine's token rule and the task's default split."""
    english = [tuple(tokens(p.english)) for p in pairs]
    french = [tuple(tokens(p.french)) for p in pairs]
    task = TranslateTask()  # seed 0, min_count 2: the task's defaults
    found = {
        "pairs": len(pairs), "english sentences": len(set(english)), "french sentences": len(set(french)),
        "english tokens": sum(map(len, english)), "french tokens": sum(map(len, french)),
        "longest english": max(map(len, english)), "longest french": max(map(len, french)),
        "train pairs": len(task.train_x), "held-out pairs": len(task.test_x),
        "held-out sentences": len(task.references),
        "source vocabulary": len(task.vocab), "target vocabulary": len(task.target_vocab),
    }
    for side, sentences in (("english", english), ("french", french)):
        counts = Counter(t for s in sentences for t in s)
        found[f"{side} distinct"] = len(counts)
        found[f"{side} twice"] = sum(n >= 2 for n in counts.values())
    return {k: f"{v:,}" for k, v in found.items()}


def provenance(source: bytes, corpus: bytes) -> str:
    kept = read_pairs(corpus.decode("utf-8"))
    f = figures(kept)
    dropped = len(read_pairs(source.decode("utf-8"))) - len(kept)
    return f"""# eng_fra.tsv

English-French sentence pairs from the Tatoeba project (https://tatoeba.org), for the `translate`
task: one pair a line, three tab-separated fields: the English sentence, its French translation,
and the pair's attribution as Tatoeba's licence asks for it, e.g.
`CC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #1158250 (Wittydev)`: the English
sentence's number and author, then the French sentence's.

- Source: the file `{PATH}` of the public GitHub repository `{REPOSITORY}` at commit
  `{COMMIT}` (sha256 `{SOURCE_SHA256}`):
  https://github.com/{REPOSITORY}/blob/{COMMIT}/{PATH}.
  It holds 5,000 lines in the layout and order of the tab-separated English-French file
  manythings.org/anki exports from Tatoeba (shortest English sentences first, from `Go.`),
  with the attribution on every line.
- sha256: `{sha256(corpus)}`
- Size: {len(corpus):,} bytes, UTF-8, {f["pairs"]} lines
- Built by: `PYTHONPATH=. python scripts/build_translation_corpus.py --source <the git directory
  of a clone of {REPOSITORY}>`; with `--check` it compares the shipped file
  with the source's cut byte for byte (or, given no source, checks the recorded sha256)

## How it was cut

- Kept: every pair with 1 to {MAX_WORDS} words on each side (the PyTorch and TensorFlow NMT tutorials'
  filter), each line unchanged with its attribution, in the source's order. The build stops at a
  line without a Tatoeba attribution (none has). Dropped: {dropped:,} pairs.
- Not kept: the PyTorch tutorial's second filter, English sentences starting "i am", "he is",
  "she is", "you are", "we are", "they are" (or their contractions). On this file (with the
  tutorial's own normalisation) it keeps 770 pairs of 461 distinct English sentences: too few to
  hold 10% of the sentences out and still teach. The copy is short already: its English sentences have 1 to 5 words.
- Words: the engine cuts them when it reads the file (`engine.tasks.translate.tokens`): the text
  NFC normalised and lower-cased, French typography's no-break and thin spaces made spaces and
  `\u2019` an apostrophe; a token is a run of letters and digits with apostrophes and hyphens inside it
  (`don't`, `j'ai`, `peut-être`), or one punctuation mark. Counted that way:

| | English | French |
| --- | ---: | ---: |
| distinct sentences | {f["english sentences"]} | {f["french sentences"]} |
| tokens | {f["english tokens"]} | {f["french tokens"]} |
| distinct tokens | {f["english distinct"]} | {f["french distinct"]} |
| tokens seen at least twice | {f["english twice"]} | {f["french twice"]} |
| longest sentence, tokens | {f["longest english"]} | {f["longest french"]} |

## The task's split (seed 0, min_count 2)

The `translate` task holds out 10% of the distinct English sentences with every translation of
each: {f["held-out sentences"]} sentences, {f["held-out pairs"]} held-out pairs, {f["train pairs"]} training pairs.
Its vocabularies come from the training pairs, words seen at least twice, with `<s>`, `</s>`,
`<pad>`, `<unk>`: {f["source vocabulary"]} English tokens (the source vocabulary) and
{f["target vocabulary"]} French tokens (the target vocabulary).

## Licence

Tatoeba's sentences are under the Creative Commons Attribution 2.0 France licence (CC-BY 2.0 FR,
https://creativecommons.org/licenses/by/2.0/fr/; https://tatoeba.org/en/terms_of_use). The
attribution it asks for travels with every pair, on its own line, as the source gives it: the
sentences' numbers on tatoeba.org and their authors' user names. The pairs are shipped unchanged,
only selected.
"""


def main() -> None:
    commands = parser(__doc__, f"the git directory of a local clone of {REPOSITORY}")
    args = commands.parse_args()
    if args.check:
        rebuilt = None if args.source is None else cut(read_source(args.source))
        what = f"the cut of {PATH} at {COMMIT[:12]}" + ("" if args.source is None else f" from {args.source}")
        check(CORPUS, rebuilt, what, SHA256)
    if args.source is None:
        commands.error(f"give --source: the git directory of a local clone of {REPOSITORY}")
    source = read_source(args.source)
    corpus = cut(source)
    write(CORPUS, corpus, PROVENANCE, "")  # the note's split is the task's, which reads the file just written
    PROVENANCE.write_text(provenance(source, corpus), encoding="utf-8", newline="\n")


if __name__ == "__main__":
    main()
