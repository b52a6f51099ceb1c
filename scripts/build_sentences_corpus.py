"""Build the labelled review sentences shipped in engine/data/: the UCI "Sentiment Labelled
Sentences" (Kotzias et al. 2015), 1,000 sentences from each of IMDB, Amazon and Yelp reviews, as
one `review,sentiment` CSV (the IMDB 50K layout the app reads) with each sentence's source and a
fixed held-out split, and a provenance note beside it.

The app and the tests read the shipped copy and never download anything. A developer rebuilds or
checks it from a local copy of a public repository that carries the dataset's three files
unchanged, read at the pinned commit by `git show`:

    python scripts/build_sentences_corpus.py --source ~/dm_2018_hw_1/.git          # write corpus and provenance
    python scripts/build_sentences_corpus.py --check --source ~/dm_2018_hw_1/.git  # the rebuild's bytes exactly?
    python scripts/build_sentences_corpus.py --check                               # no source: the digest only
"""
from __future__ import annotations

import csv
import io
import random
from pathlib import Path

from corpus_files import DATA, check, parser, read_pinned, sha256, write

CORPUS = DATA / "sentences.csv"
PROVENANCE = DATA / "sentences.md"
REPOSITORY = "omarsar/dm_2018_hw_1"
COMMIT = "9642488481140b1697ff2dea5637596c4cd43c69"  # the commit that added the dataset's folder
FOLDER = "sentiment labelled sentences"
# Each file as the UCI archive has it (sentence, a tab, 0 or 1), and its sha256 at COMMIT.
FILES = {
    "imdb": ("imdb_labelled.txt", "29cb10b2bfbc60ea33dcbd5abaa8bcf977b142cec7926c627dd76232aaafbfed"),
    "amazon": ("amazon_cells_labelled.txt", "47003fc0a0d4840b00e96e715b6189bad09e7443a3da41c4cbe12ffc79f86ae3"),
    "yelp": ("yelp_labelled.txt", "c76468b7b5c6e56a0804d728345c5f84aa2142ddb214420f61cc9cfd4c00d2ea"),
}
HELD_OUT = 100  # sentences held out of each (source, label): 600 of the 3,000, a fifth
SPLIT_SEED = 0  # the one shuffle that picks them: fixed, so word vectors trained on the training
# sentences' text read the same sentences whatever seed a model trains with


def read_source(git_dir: Path) -> dict[str, bytes]:
    return {source: read_pinned([git_dir], COMMIT, f"{FOLDER}/{name}", digest, REPOSITORY)
            for source, (name, digest) in FILES.items()}


def rows_of(files: dict[str, bytes]) -> list[tuple[str, str, str, str]]:
    """(review, sentiment, source, split) for every sentence, in the files' order. A line is the
    sentence, a tab and its label; the sentence's surrounding spaces are dropped."""
    rows = []
    rng = random.Random(SPLIT_SEED)
    for source, data in files.items():
        parsed = []
        for line in data.decode("utf-8").split("\n"):
            if line.strip():
                sentence, label = line.rsplit("\t", 1)
                parsed.append((sentence.strip(), {"0": "negative", "1": "positive"}[label.strip()]))
        held = set()
        for sentiment in ("negative", "positive"):
            held |= set(rng.sample([i for i, (_, s) in enumerate(parsed) if s == sentiment], HELD_OUT))
        rows += [(review, sentiment, source, "held_out" if i in held else "train")
                 for i, (review, sentiment) in enumerate(parsed)]
    return rows


def corpus_of(files: dict[str, bytes]) -> bytes:
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["review", "sentiment", "source", "split"])
    writer.writerows(rows_of(files))
    return out.getvalue().encode("utf-8")


def provenance(corpus: bytes) -> str:
    rows = list(csv.DictReader(io.StringIO(corpus.decode("utf-8"))))
    held = sum(r["split"] == "held_out" for r in rows)
    links = "\n".join(f"  - `{FOLDER}/{name}` (sha256 `{digest}`)" for name, digest in FILES.values())
    return f"""# sentences.csv

The `sentences` corpus of the `sentiment` task: {len(rows):,} real sentences from reviews, each labelled
positive or negative by hand. The UCI Machine Learning Repository's "Sentiment Labelled Sentences",
made for Kotzias, Denil, de Freitas and Smyth, "From Group to Individual Labels using Deep Features",
KDD 2015. Its readme: 500 positive and 500 negative sentences from each of imdb.com (film reviews, from
Maas et al. 2011's IMDB set), amazon.com (mobile phones and their accessories, from McAuley et al. 2013)
and yelp.com (restaurants), "selected randomly for larger datasets of reviews", with "a clearly positive
or negative connotation".

- Source: the dataset's three files, unchanged since UCI's archive, in the public GitHub repository
  `{REPOSITORY}` at commit `{COMMIT}`:
{links}
  https://github.com/{REPOSITORY}/tree/{COMMIT}/sentiment%20labelled%20sentences
- How it was cut: every line kept, in the files' order (IMDB, Amazon, Yelp). A line is a sentence, a
  tab and 0 (negative) or 1 (positive); the sentence is kept with its surrounding spaces dropped.
  Columns `review,sentiment` (the layout of the IMDB 50K CSV a teacher may upload), `source` and
  `split`
- The split: {held:,} sentences held out (`held_out`), {HELD_OUT} of each source and label, picked by
  Python's `random.Random({SPLIT_SEED}).sample`; the other {len(rows) - held:,} are `train`. Fixed, not
  drawn per seed, so word vectors trained on the training sentences' text (pretrained/) read none of the
  held-out rows. Short sentences repeat across sources: 10 training sentences have the very words of a
  held-out one ("great phone"), which the sentiment task leaves out of its training rows but word2vec
  read
- Size: {len(corpus):,} bytes (UTF-8)
- sha256: `{sha256(corpus)}`
- Built by: `python scripts/build_sentences_corpus.py --source <the git directory of a clone of
  {REPOSITORY}>`; with `--check` it compares the shipped file with a rebuild byte for byte

## Licence

The UCI Machine Learning Repository publishes the dataset (id 331,
https://archive.ics.uci.edu/dataset/331/sentiment+labelled+sentences) under the Creative Commons
Attribution 4.0 International licence (CC BY 4.0). Attribution: Dimitrios Kotzias, Misha Denil,
Nando de Freitas and Padhraic Smyth, "From Group to Individual Labels using Deep Features", KDD 2015;
the sentences' source reviews as named above. This file changes the dataset's layout (one CSV, a split
column), not its sentences.
"""


def main() -> None:
    commands = parser(__doc__, f"the git directory of a local clone of {REPOSITORY}")
    args = commands.parse_args()
    if args.check:
        rebuilt = None if args.source is None else corpus_of(read_source(args.source))
        recorded = PROVENANCE.read_text(encoding="utf-8").split("sha256: `")[-1].split("`")[0]
        check(CORPUS, rebuilt, f"the rebuild of {REPOSITORY} at {COMMIT[:12]}", recorded)
    if args.source is None:
        commands.error(f"give --source: the git directory of a local clone of {REPOSITORY}")
    corpus = corpus_of(read_source(args.source))
    write(CORPUS, corpus, PROVENANCE, provenance(corpus))


if __name__ == "__main__":
    main()
