"""The cuts: each corpus a task reads, made from its public files' bytes (keyed by their registry path),
deterministic, so its sha256 is the same on every machine and recorded in the registry.

What each cut keeps and why is said where it is made; the files' sources are in registry.py.
"""
from __future__ import annotations

import csv
import io
import random
import zipfile

# Jane Austen's four novels as GITenberg keeps Project Gutenberg's plain-text files, one repository a book,
# its master pinned at its last commit (2018-10-20/22): (number, title, repository, commit, sha256, bytes).
AUSTEN = (
    ("161", "Sense and Sensibility", "GITenberg/Sense-and-Sensibility_161", "1cd7ffed1c21536f6ee2fea4d68c96e2c12ce14c",
     "9109bd8aabe8f36d0814bd6f5afad1e278b1369d66c0d3846667f0659e119d27", 706_143),
    ("158", "Emma", "GITenberg/Emma_158", "9943f6422b9246e7ad37625d6bd014b035fbfdea",
     "1db38633b6135805b4ca4b874ec5ced5be608ac3c3138cdae6019fc346d633a2", 918_962),
    ("121", "Northanger Abbey", "GITenberg/Northanger-Abbey_121", "c1b554e6d17c67d26b4fbd4bcc92d7eb4f27b2e7",
     "64d01d2b7fcf2fb2ce095e857ec2adb0867ee1b25df2fbe1e3a6aa9b6e244c68", 461_027),
    ("105", "Persuasion", "GITenberg/Persuasion_105", "d408e95fc4098953e8dd8eb7cac6023802cb54f4",
     "a773a0205cc090d3844408b157831a29263cc5207630c3a66b768216085ed91b", 495_015),
)
# Each book's title line: what comes before it (after Gutenberg's header) is the volunteers' credits.
TITLE_LINES = {"161": "SENSE AND SENSIBILITY", "158": "EMMA", "121": "NORTHANGER ABBEY", "105": "Persuasion"}
GUTENBERG_START = "*** START OF THIS PROJECT GUTENBERG EBOOK"  # the header ends on this line
GUTENBERG_END = "End of the Project Gutenberg EBook"  # the footer (and its licence) starts on this line
BOOK_SEPARATOR = "\n\n\n\n"  # three blank lines, as between chapters

# The UCI "Sentiment Labelled Sentences" files (a sentence, a tab, 0 or 1): (name, sha256, bytes), in the
# order the CSV lists them.
SENTENCE_FILES = (
    ("imdb_labelled.txt", "29cb10b2bfbc60ea33dcbd5abaa8bcf977b142cec7926c627dd76232aaafbfed", 85_276),
    ("amazon_cells_labelled.txt", "47003fc0a0d4840b00e96e715b6189bad09e7443a3da41c4cbe12ffc79f86ae3", 58_226),
    ("yelp_labelled.txt", "c76468b7b5c6e56a0804d728345c5f84aa2142ddb214420f61cc9cfd4c00d2ea", 61_320),
)
HELD_OUT_EACH = 100  # sentences held out of each (source, label): 600 of the 3,000, a fifth
# One fixed shuffle picks them, so word vectors trained on the training sentences' text
# (pretrained/word_vectors.py) read none of the held-out rows whatever seed a model trains with.
SPLIT_SEED = 0


def unchanged(files: dict[str, bytes]) -> bytes:
    """The one file, as published (Tiny Shakespeare; the 5,000 Tatoeba pairs)."""
    (data,) = files.values()
    return data


def austen(files: dict[str, bytes]) -> bytes:
    """The four books' own text, in order of publication, joined by three blank lines: from each
    book's title line to the line before Gutenberg's end marker (its header, the volunteers' credits,
    its footer and licence cut off, so no line names Project Gutenberg), CRLF made LF, blank lines at
    either end dropped. Case, punctuation and Gutenberg's _italics_ are kept: words are cut when read
    (engine.prose.words)."""
    books = [gutenberg_book(files[f"austen/{number}.txt"], TITLE_LINES[number]) for number, *_ in AUSTEN]
    return (BOOK_SEPARATOR.join(books) + "\n").encode("ascii")


def gutenberg_book(source: bytes, title_line: str) -> str:
    """A Project Gutenberg plain-text file's book: from its title line (after the header and the volunteers'
    credits) to the line before the end marker, LF line ends, no blank lines at either end."""
    lines = source.decode("ascii").replace("\r\n", "\n").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(GUTENBERG_START))
    first = next(i for i in range(start, len(lines)) if lines[i].strip() == title_line)
    end = next(i for i in range(first, len(lines)) if lines[i].startswith(GUTENBERG_END))
    text = "\n".join(lines[first:end]).strip("\n")
    if "gutenberg" in text.lower():  # the licence asks for every reference to go
        raise ValueError(f"{title_line} still names Project Gutenberg after the cut: its markers moved")
    return text


def sentences(files: dict[str, bytes]) -> bytes:
    """One review,sentiment,source,split CSV (the IMDB 50K layout the app reads) of every sentence in the
    files' order (IMDB, Amazon, Yelp), its surrounding spaces dropped; HELD_OUT_EACH of each source and
    label held out by random.Random(SPLIT_SEED)."""
    rows = []
    rng = random.Random(SPLIT_SEED)
    for name, _, _ in SENTENCE_FILES:
        source = name.split("_")[0]
        parsed = []
        for line in files[f"sentiment-labelled-sentences/{name}"].decode("utf-8").split("\n"):
            if line.strip():
                sentence, label = line.rsplit("\t", 1)
                parsed.append((sentence.strip(), {"0": "negative", "1": "positive"}[label.strip()]))
        held = set()
        for sentiment in ("negative", "positive"):
            held |= set(rng.sample([i for i, (_, s) in enumerate(parsed) if s == sentiment], HELD_OUT_EACH))
        rows += [(review, sentiment, source, "held_out" if i in held else "train")
                 for i, (review, sentiment) in enumerate(parsed)]
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["review", "sentiment", "source", "split"])
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


def fra_txt(files: dict[str, bytes]) -> bytes:
    """manythings.org's fra.txt out of its zip, unchanged (its _about.txt's terms are the registry's)."""
    (data,) = files.values()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.read("fra.txt")
