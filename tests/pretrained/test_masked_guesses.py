"""The shipped masked language model (BERT's objective) fills a <mask> as a reader accepts (issue 46): of six
sentences with the hidden word at a noun, an adjective and a verb position (two each), its top guess is a word of
the right kind in at least five, each checked against the words stated here. It was trained to the same number of
words predicted as the shipped causal model (GPT's objective), whose card it is read beside."""
import pytest

import engine
from app.session import pretrained
from app.session.bert_gpt import CAUSAL, MASKED, SHIPPED, words_predicted
from engine.contextual import guess_mask
from engine.tasks.masked_lm import chosen_count

# The words a reader accepts at each <mask> (in Austen's vocabulary), written before the model was built: any noun
# a man takes with him when he goes out; any place that can be full of people; any adjective for an evening, and
# for a young woman; a verb done to a letter twice; a verb a man does to a woman's hand.
ACCEPTED = {
    "he took his <mask> and went out": {
        "hat", "leave", "horse", "seat", "place", "gun", "stick", "coat", "book", "books", "letter", "letters", "arm",
        "wife", "son", "daughter", "sister", "brother", "friend", "father", "mother", "servant", "dog", "dogs",
        "papers", "paper", "pen", "watch", "candle", "money", "purse", "things", "chair", "key", "gloves",
        "umbrella", "breakfast", "tea", "dinner", "glass", "pencil", "pocket", "cloak", "child",
        "children", "cousin", "guest", "companion", "way", "station", "bonnet", "shawl", "cane",
        "basket", "gig", "carriage", "whip", "boots", "newspaper", "note", "family", "partner",
    },
    "the <mask> was full of people": {
        "room", "rooms", "house", "church", "street", "streets", "town", "hall", "place", "road", "theatre",
        "ballroom", "carriage", "shop", "village", "parlour", "garden", "park", "inn", "library", "world", "city",
        "country", "table", "party", "assembly", "chapel", "square", "market", "gallery",
        "coach", "crowd", "neighbourhood", "walk", "walks", "shrubbery", "building", "passage", "stairs", "door",
    },
    "it was a very <mask> evening": {
        "fine", "pleasant", "agreeable", "cold", "warm", "wet", "dull", "long", "happy", "delightful", "charming",
        "pretty", "good", "bad", "stormy", "quiet", "cheerful", "lovely", "beautiful", "dark", "late", "short",
        "dreadful", "uncomfortable", "comfortable", "merry", "odd", "strange", "interesting", "sweet", "mild",
        "rainy", "busy", "different", "particular", "melancholy", "tedious", "gay", "lively", "dirty", "fair",
        "great", "hot", "disagreeable", "unpleasant", "painful", "sad", "tiresome", "gloomy", "wretched",
    },
    "she is a very <mask> young woman": {
        "pretty", "sweet", "good", "fine", "sensible", "clever", "amiable", "agreeable", "charming", "elegant",
        "handsome", "pleasant", "nice", "accomplished", "superior", "lovely", "beautiful", "kind", "modest",
        "respectable", "proper", "fortunate", "happy", "interesting", "lively", "young", "silly",
        "foolish", "odd", "strange", "poor", "rich", "plain", "cheerful", "gentle", "delightful", "excellent",
        "worthy", "particular", "fashionable", "genteel", "natural", "unaffected", "ignorant", "little", "great",
        "different", "intelligent", "artless", "quiet", "determined", "unhappy", "extraordinary", "remarkable",
    },
    "she <mask> the letter twice": {
        "read", "wrote", "opened", "folded", "received", "sent", "saw", "examined", "kissed", "studied", "perused",
        "copied", "turned", "shewed", "showed", "gave", "signed", "tore", "burnt", "burned", "sealed", "took",
        "held", "answered", "mentioned", "began", "directed", "forwarded", "returned", "repeated", "looked",
    },
    "he <mask> her hand": {
        "took", "kissed", "pressed", "held", "seized", "shook", "squeezed", "touched", "grasped", "caught",
        "released", "asked", "sought", "won", "gained", "refused", "gave", "offered", "claimed", "dropped", "let",
        "raised", "drew", "felt", "solicited", "requested", "obtained", "secured",
    },
}
AT_LEAST = 5


@pytest.fixture(scope="module")
def models():
    opened = {}
    for run, name in SHIPPED.items():
        model, card = pretrained.load(pretrained.read(name))
        opened[run] = model, card, pretrained.setup_for(card).make_task()
    return opened


def top_guesses(model, task) -> dict[str, str]:
    return {sentence: guess_mask(model, task, sentence).top(1)[0][0] for sentence in ACCEPTED}


def right_guesses(model, task) -> tuple[int, dict[str, str]]:
    guessed = top_guesses(model, task)
    return sum(word in ACCEPTED[sentence] for sentence, word in guessed.items()), guessed


def test_the_masked_models_top_guess_is_a_word_of_the_right_kind_in_five_of_six_sentences(models):
    """Built, it guessed wife, house, fine, pretty, saw ("she saw the letter twice") and saw ("he saw her hand", not
    a word a reader accepts there). The causal model, reading the words left of the mask only, guessed wife, same,
    fine, good, was and had: three of six."""
    model, _, task = models[MASKED]
    for sentence in ACCEPTED:  # every word read is one the model knows
        assert "<unk>" not in engine.contextual.read_sentence(task, sentence, masked=True).words, sentence
    right, guessed = right_guesses(model, task)
    assert right >= AT_LEAST, guessed
    causal_right, causal_guessed = right_guesses(*(models[CAUSAL][i] for i in (0, 2)))
    assert causal_right < right, (guessed, causal_guessed)


def test_the_shipped_masked_and_causal_models_trained_on_the_same_number_of_words_predicted(models):
    """Devlin et al.'s masked LM predicts 15% of a window's words, a causal LM every next word: the masked model
    trained 32 / 5 times the causal one's steps, so both predicted 10,240,000 words."""
    masked, causal = (models[run][1] for run in (MASKED, CAUSAL))
    assert masked.fields["training"]["steps"] == 32_000 and causal.fields["training"]["steps"] == 5_000
    assert chosen_count(32) == 5  # of each window's 32 words
    assert words_predicted(MASKED, masked) == words_predicted(CAUSAL, causal) == 32_000 * 64 * 5 == 10_240_000
