"""The English prose shipped for word embeddings (engine/data/prose.txt: four novels of Jane Austen,
whose source, licence and cut engine/data/prose.md records) and the one rule that cuts text into
words. The file keeps the books' case and punctuation; words are cut here, so the rule is written
once and the note's figures are counted by it."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROSE = Path(__file__).resolve().parent / "data" / "prose.txt"
# Letters with an apostrophe allowed inside (don't, emma's): Gutenberg's _italics_, digits, the double
# dash and every other mark separate words.
WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")
# Pairs of words the novels use alike, each word seen at least 50 times (mr 1,749, mrs 1,697; note 50):
# what a trained embedding should place near each other (tests/engine/test_word2vec.py,
# benchmarks/word2vec_speed.py). Sisters' names count: Elinor and Marianne share most scenes.
RELATED = (("mr", "mrs"), ("he", "she"), ("his", "her"), ("brother", "sister"), ("father", "mother"),
           ("morning", "evening"), ("day", "night"), ("two", "three"), ("three", "four"), ("husband", "wife"),
           ("elinor", "marianne"), ("letter", "note"), ("sir", "lady"), ("walked", "walking"), ("man", "woman"),
           ("son", "daughter"))


def words(text: str) -> list[str]:
    """The words of `text`, lower-cased, in order."""
    return WORD.findall(text.lower())


@cache
def prose_words() -> tuple[str, ...]:
    """Every word of the shipped prose, in order (read once a process: the file never changes)."""
    return tuple(words(PROSE.read_text(encoding="ascii")))
