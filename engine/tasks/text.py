"""Text in: the shipped corpus and Tiny Shakespeare, checks on uploaded text, and word tokenisation."""
from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from .. import datasets

# Real text on every machine, offline: a snapshot of a few of the Python standard library's own
# source files (provenance in charlm_corpus.md beside it; scripts/build_charlm_corpus.py builds
# it). Shipped rather than read from the running interpreter, whose files change between
# versions and would change the vocabulary. A char-RNN trained on it learns to indent, open and
# close brackets, and write `def`.
CHARLM_CORPUS = Path(__file__).resolve().parent.parent / "data" / "charlm_corpus.txt"
MAX_CHAR_VOCAB = 256
MAX_TEXT_CHARS = 5_000_000
DECODE_BYTES = 1 << 20  # what utf8_size decodes at a time


def charlm_corpus() -> str:
    """The shipped Python corpus, exactly as stored: bytes decoded, no newline translation."""
    return shipped_text(CHARLM_CORPUS)


def shakespeare() -> str:
    """Tiny Shakespeare, char-rnn's and nanoGPT's corpus, as published (engine.datasets: got from its public
    source when a user asks, not shipped); CorpusMissing when it is not on this machine."""
    return datasets.corpus_text("shakespeare")


@functools.cache
def shipped_text(path: Path) -> str:
    """A shipped file's text, read once a process: every task and session shares it."""
    return path.read_bytes().decode("utf-8")


def decode_text(data: bytes | str, what: str = "text", limit: int = MAX_TEXT_CHARS) -> str:
    """Uploaded bytes to text, or a ValueError saying why they are not usable."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")  # also drops the byte-order mark Excel writes
        except UnicodeDecodeError as err:
            raise not_utf8(what, err.start) from None
    check_text(data, what, limit)
    return data


def check_text(data: bytes | str, what: str = "text", limit: int = MAX_TEXT_CHARS) -> None:
    """decode_text's checks without its decoded copy: bytes are decoded a slice at a time and let go."""
    if isinstance(data, bytes):
        chars, blank = utf8_size(data, what)
    elif isinstance(data, str):
        chars, blank = len(data), not data or data.isspace()
    else:
        raise ValueError(f"the {what} must be text, got {type(data).__name__}")
    if blank:
        raise ValueError(f"the {what} is empty; give it some text")
    if chars > limit:
        raise ValueError(f"the {what} has {chars:,} characters; the limit is {limit:,}, so cut it")


def utf8_size(data: bytes, what: str) -> tuple[int, bool]:
    """(characters, whether every one is whitespace) of UTF-8 bytes past a byte-order mark, or
    decode_text's ValueError naming the first byte that is not UTF-8."""
    body = memoryview(data)[len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0 :]
    decoder = codecs.getincrementaldecoder("utf-8")()
    chars, blank = 0, True
    for start in range(0, len(body), DECODE_BYTES):
        held = len(decoder.getstate()[0])  # bytes of a character the previous slice cut in two
        try:
            text = decoder.decode(body[start : start + DECODE_BYTES], final=start + DECODE_BYTES >= len(body))
        except UnicodeDecodeError as err:  # err.start counts from the held bytes
            raise not_utf8(what, start - held + err.start) from None
        chars += len(text)
        blank = blank and (not text or text.isspace())
    return chars, blank


def not_utf8(what: str, byte: int) -> ValueError:
    return ValueError(
        f"the {what} is not UTF-8 text (byte {byte} cannot be decoded); save it as UTF-8 and upload it again"
    )


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


def word_pieces(text: str, piece_chars: int) -> Iterator[list[str]]:
    """words(text) in lists of the words of about piece_chars characters each: a review of millions
    of characters never becomes one list of millions of str objects."""
    if len(text) <= piece_chars:
        yield words(text)
        return
    text = HTML_TAG.sub(" ", text.lower())  # as words() reads it
    start = 0
    while start < len(text):
        end = text.find(" ", start + piece_chars)  # no word holds a space, so none is cut in two
        end = len(text) if end < 0 else end
        yield WORD.findall(text, start, end)
        start = end
