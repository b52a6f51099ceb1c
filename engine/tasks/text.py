"""Text in: the shipped corpus, checks on uploaded text, and word tokenisation."""
from __future__ import annotations

import functools
import re
from pathlib import Path

# Real text on every machine, offline: a snapshot of a few of the Python standard library's own
# source files (provenance in charlm_corpus.md beside it; scripts/build_charlm_corpus.py builds
# it). Shipped rather than read from the running interpreter, whose files change between
# versions and would change the vocabulary. A char-RNN trained on it learns to indent, open and
# close brackets, and write `def`.
CHARLM_CORPUS = Path(__file__).resolve().parent.parent / "data" / "charlm_corpus.txt"
MAX_CHAR_VOCAB = 256
MAX_TEXT_CHARS = 5_000_000


@functools.cache
def charlm_corpus() -> str:
    """The shipped corpus, exactly as stored: bytes decoded, no newline translation."""
    return CHARLM_CORPUS.read_bytes().decode("utf-8")


def decode_text(data: bytes | str, what: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
    """Uploaded bytes to text, or a ValueError saying why they are not usable."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")  # also drops the byte-order mark Excel writes
        except UnicodeDecodeError as err:
            raise ValueError(
                f"the {what} is not UTF-8 text (byte {err.start} cannot be decoded); "
                "save it as UTF-8 and upload it again"
            ) from None
    if not isinstance(data, str):
        raise ValueError(f"the {what} must be text, got {type(data).__name__}")
    if not data.strip():
        raise ValueError(f"the {what} is empty; give it some text")
    if len(data) > limit:
        raise ValueError(f"the {what} has {len(data):,} characters; the limit is {limit:,}, so cut it")
    return data


def char_vocab(text: str) -> tuple[str, ...]:
    chars = tuple(sorted(set(text)))
    if len(chars) > MAX_CHAR_VOCAB:
        raise ValueError(
            f"the text uses {len(chars)} distinct characters; the cap is {MAX_CHAR_VOCAB}. "
            "Use text with fewer distinct characters (plain ASCII has under 100)."
        )
    return chars


# A word: letters and digits of any script ("amélie", "naïve", "2001"), with apostrophes inside it
# ("don't"); [a-z0-9']+ split "amélie" into "am" and "lie" (179 of 2,000 IMDB reviews have such words).
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
HTML_TAG = re.compile(r"<[^>]*>")  # IMDB reviews break lines with <br />


def words(text: str) -> list[str]:
    return WORD.findall(HTML_TAG.sub(" ", text.lower()))
