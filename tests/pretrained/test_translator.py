"""The shipped translator at real size (issue 46): of ten everyday sentences a lecturer would type, nine are
translated as a French reader would accept, each against the references stated here (the tenth is named); its card
gives held-out BLEU by English sentence length, at least 36 greedy on the sentences of 1-10 words, and better
again with a beam; it trained within 90 minutes on two threads and its file is at most 25 MB. The card's figures
are re-scored on its held-out pairs in tests/pretrained/test_pretrained.py."""
import pytest

from app.session import pretrained
from app.widgets.pretrained import metric_text
from engine.beam import beam_search
from pretrained.heldout import BY_LENGTH, SHORT

NAME = "translate-gru"

# Typed as a lecturer would: short questions, negations, pronouns, the past tense. Each with the French a reader
# accepts as its translation (tokens as the task cuts them: lower case, marks apart), written before the model
# translated any of them; a translation not listed fails, whatever its BLEU.
EVERYDAY = {
    "I am cold.": ("j'ai froid .",),
    "Where is the station?": ("où est la gare ?",),
    "I don't know.": ("je ne sais pas .", "je l'ignore ."),
    "She is my sister.": ("elle est ma sœur .", "c'est ma sœur ."),
    "He is not here.": ("il n'est pas ici .", "il n'est pas là ."),
    "Do you speak French?": ("parlez-vous français ?", "parles-tu français ?", "tu parles français ?",
                             "vous parlez français ?", "est-ce que tu parles français ?",
                             "est-ce que vous parlez français ?"),
    "What time is it?": ("quelle heure est-il ?",),
    "We went to the beach yesterday.": ("nous sommes allés à la plage hier .", "nous sommes allées à la plage hier .",
                                        "on est allé à la plage hier .", "hier, nous sommes allés à la plage ."),
    "They are eating.": ("ils mangent .", "elles mangent .", "ils sont en train de manger .",
                         "elles sont en train de manger ."),
    "I didn't see him.": ("je ne l'ai pas vu .",),
}


@pytest.fixture(scope="module")
def translator():
    model, card = pretrained.load(pretrained.read(NAME))
    return model, card, pretrained.setup_for(card).make_task()


def greedy(model, task, text: str) -> str:
    return task.decode_target(beam_search(model, task.encode(text), width=1).best.tokens)


# The one of the ten it gets wrong, as built: "je suis enrhumé ." ("I have a cold"; "I'm cold." gives "je suis froid
# .", a learner's mistake). The pair "I am cold." / "J'ai froid." is among the held-out sentences, so it never
# trained on it.
WRONG = {"I am cold."}


def test_nine_of_ten_everyday_sentences_are_translated_as_a_french_reader_accepts(translator):
    """Decoded greedily, as the page's free run shows them; every word of each is one the model knows."""
    model, _, task = translator
    assert not [english for english in EVERYDAY if task.unknown_words(english)]
    written = {english: greedy(model, task, english) for english in EVERYDAY}
    wrong = {english for english, french in written.items() if french not in EVERYDAY[english]}
    assert wrong == WRONG, written
    assert written["I am cold."] == "je suis enrhumé ."
    assert task.typed_example not in WRONG and greedy(model, task, task.typed_example) in EVERYDAY[task.typed_example]


def test_the_card_gives_bleu_by_length_at_least_36_greedy_on_short_sentences_and_more_with_a_beam(translator):
    _, card, _ = translator
    metrics = card.metrics
    low, high = SHORT
    short = {how: metrics[f"BLEU, {how}, {low}-{high} words"] for how in ("greedy", "beam 3")}
    assert short["greedy"] >= 36 and short["beam 3"] > short["greedy"]
    assert metrics["BLEU, beam 3"] > metrics["BLEU, greedy"]
    by_length = [metrics[f"BLEU, greedy, {a}-{b} words"] for a, b in BY_LENGTH]
    assert len(by_length) == 4 and all(0 < bleu < 100 for bleu in by_length)


def test_it_trained_within_90_minutes_on_two_threads_into_at_most_25_mb(translator):
    _, card, task = translator
    training = card.fields["training"]
    assert training["torch_threads"] == 2 and training["seconds"] <= 90 * 60
    assert card.fields["checkpoint"]["bytes"] <= 25 * 2**20 and card.fields["checkpoint"]["stored as"] == "float16"
    assert task.corpus == "eng-fra-2017" and task.max_words == 20


def test_homes_card_quotes_its_bleu_on_short_sentences(translator):
    _, card, _ = translator
    said = metric_text(card)
    greedy, beam = card.metrics["BLEU, greedy, 1-10 words"], card.metrics["BLEU, beam 3, 1-10 words"]
    assert said == (f"held-out BLEU {greedy:.1f} greedy and {beam:.1f} with a beam of 3 on held-out sentences of "
                    "1-10 English words")
