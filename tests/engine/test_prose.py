"""The shipped prose (its digest and sources: test_corpus_files.py): cut as its provenance says (no Project
Gutenberg text left), and the note's word figures are the engine's own word rule's."""
from collections import Counter

from engine.prose import PROSE, prose_words, words
from tests.engine.corpus_scripts import figure, script

PROVENANCE = PROSE.with_suffix(".md")


def test_the_notes_word_figures_are_the_engines_words():
    counted = Counter(prose_words())
    assert counted.total() == figure(PROVENANCE, r"; ([\d,]+) words, ") == 442_256
    assert len(counted) == figure(PROVENANCE, r"words, ([\d,]+)\s+distinct") == 11_780
    frequent = figure(PROVENANCE, r"distinct; ([\d,]+) words occur at least 5 times")
    assert sum(n >= 5 for n in counted.values()) == frequent


def test_no_project_gutenberg_text_is_left():
    """The licence asks for every reference to Project Gutenberg to go with its header and footer."""
    assert PROSE.read_bytes().isascii()
    text = PROSE.read_text(encoding="ascii")
    assert "gutenberg" not in text.lower() and "ebook" not in text.lower()
    assert text.startswith("SENSE AND SENSIBILITY\n") and text.endswith("Finis\n")
    for title in ("EMMA", "NORTHANGER ABBEY", "Persuasion"):
        assert f"\n\n\n\n{title}\n" in text  # each book starts on its title line after three blank lines


def test_words_are_lower_case_letters_with_inner_apostrophes():
    assert words("Mr. Knightley's _very_ kind--don't you think? 'Tis 1811.") == \
        ["mr", "knightley's", "very", "kind", "don't", "you", "think", "tis"]


def test_the_cut_keeps_the_book_between_the_markers():
    """The cut on a made-up file in Gutenberg's layout: header, credits, title, text, footer."""
    build = script("prose")
    book = build.BOOKS[0]._replace(first_line="A TALE")
    source = (f"The Project Gutenberg EBook of A Tale\r\n\r\n{build.START} A TALE ***\r\n\r\nProduced by someone\r\n"
              f"\r\nA TALE\r\n\r\nOnce upon a time.\r\n\r\n\r\n{build.END} of A Tale\r\n\r\nlicence\r\n").encode()
    assert build.cut(book, source) == "A TALE\n\nOnce upon a time."
