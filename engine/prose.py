"""The English prose for word embeddings (four novels of Jane Austen: the corpus "prose" of
engine.datasets, which records their source, licence and cut) and the one rule that cuts text into
words. The text keeps the books' case and punctuation; words are cut here, so the rule is written
once and the note's figures are counted by it."""
from __future__ import annotations

import re
from functools import cache

from . import datasets

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
    """Every word of the prose, in order (read once a process: the text never changes); CorpusMissing when
    its files are not on this machine."""
    return tuple(words(datasets.corpus_text("prose")))
