"""The prose as engine.datasets cuts it from the four Gutenberg files (the tests' mirror: ../shared/data): no
Project Gutenberg text left, and its word figures by the engine's own word rule."""
from collections import Counter

from engine import datasets
from engine.datasets import cuts
from engine.prose import prose_words, words


def test_the_word_figures_of_the_engines_words():
    counted = Counter(prose_words())
    assert counted.total() == 442_256 and len(counted) == 11_780
    assert sum(n >= 5 for n in counted.values()) == 4_501  # word2vec's vocabulary at its default min_count


def test_no_project_gutenberg_text_is_left():
    """The licence asks for every reference to Project Gutenberg to go with its header and footer."""
    data = datasets.corpus_bytes("prose")
    assert data.isascii()
    text = data.decode("ascii")
    assert "gutenberg" not in text.lower() and "ebook" not in text.lower()
    assert text.startswith("SENSE AND SENSIBILITY\n") and text.endswith("Finis\n")
    for title in ("EMMA", "NORTHANGER ABBEY", "Persuasion"):
        assert f"\n\n\n\n{title}\n" in text  # each book starts on its title line after three blank lines


def test_words_are_lower_case_letters_with_inner_apostrophes():
    assert words("Mr. Knightley's _very_ kind--don't you think? 'Tis 1811.") == \
        ["mr", "knightley's", "very", "kind", "don't", "you", "think", "tis"]


def test_the_cut_keeps_the_book_between_the_markers():
    """The cut on a made-up file in Gutenberg's layout: header, credits, title, text, footer."""
    source = (f"The Project Gutenberg EBook of A Tale\r\n\r\n{cuts.GUTENBERG_START} A TALE ***\r\n\r\n"
              f"Produced by someone\r\n\r\nA TALE\r\n\r\nOnce upon a time.\r\n\r\n\r\n{cuts.GUTENBERG_END} of A Tale"
              "\r\n\r\nlicence\r\n").encode()
    assert cuts.gutenberg_book(source, "A TALE") == "A TALE\n\nOnce upon a time."
