"""The read-outs of engine/contextual.py (issue 31) against the models themselves: each model's
distribution at the <mask> against a direct forward (the next-word model's against the words left
of the mask alone), every layer's vector of a word against a manual forward block by block, the
cosines of one word in two sentences, and a message saying what to change for every bad sentence."""
import pytest
import torch
import torch.nn.functional as F

import engine
from engine import contextual
from engine.attention import causal_mask
from engine.tasks.masked_lm import MASK, UNK

from .test_validation import raises_saying as raises_with


def raises_saying(call, fragments):
    return raises_with(call, *fragments)

A = "we walked along the bank of the river"
B = "he put all his money in the bank"


@pytest.fixture(scope="module")
def models():
    """(task, model) of each objective, randomly initialised in float64 (the read-outs need no training)."""
    out = {}
    for name in ("masked_lm", "word_lm"):
        task = engine.make_task(name, seed=0)
        out[name] = task, engine.build_model(task.preset.model, task, seed=1).double()
    return out


def ids(task, words):
    return torch.tensor([MASK if w == "<mask>" else task.index.get(w, UNK) for w in words])


def test_the_masked_models_distribution_is_its_softmax_at_the_mask_of_the_whole_sentence(models):
    task, model = models["masked_lm"]
    model.train()  # the read-out runs in eval mode and leaves the mode as it was
    guess = contextual.guess_mask(model, task, "She was very [MASK] to see him.")
    assert model.training and guess.both_sides
    words = ("she", "was", "very", "<mask>", "to", "see", "him")
    assert guess.reads == words
    model.eval()
    with torch.no_grad():
        direct = model(ids(task, words)[None])[0, 3].softmax(-1)  # [V]
    torch.testing.assert_close(guess.probs, direct, atol=0, rtol=0)
    assert guess.probs.sum().item() == pytest.approx(1.0)
    top = guess.top(5)
    assert [w for w, _ in top] == [task.vocab[i] for i in direct.topk(5).indices]
    # it reads the right side: another word after the mask moves it
    other = contextual.guess_mask(model, task, "she was very <mask> to see her")
    assert (other.probs - guess.probs).abs().max() > 1e-6


def test_the_next_word_model_reads_only_the_words_left_of_the_mask(models):
    task, model = models["word_lm"]
    guess = contextual.guess_mask(model, task, "she was very <mask> to see him")
    assert not guess.both_sides and guess.reads == ("she", "was", "very")
    model.eval()
    with torch.no_grad():
        direct = model(ids(task, guess.reads)[None])[0, -1].softmax(-1)  # [V]: the word after "very"
    torch.testing.assert_close(guess.probs, direct, atol=0, rtol=0)
    for right in ("she was very <mask>", "she was very <mask> indeed sorry for all of them"):
        assert torch.equal(contextual.guess_mask(model, task, right).probs, guess.probs)
    raises_saying(lambda: contextual.guess_mask(model, task, "<mask> was here"),
                  ["the <mask> is the first word", "only the words to its left", "put at least one word before"])


@pytest.mark.parametrize("text, words", [
    ("", ["type a sentence with one <mask>"]),
    ("   \n", ["type a sentence with one <mask>"]),
    ("she was very happy", ["no <mask>", "write <mask> where the hidden word goes"]),
    ("<mask> was very <mask>", ["has 2 masks", "keep one <mask>"]),
    ("<mask> !!", ["no word besides the <mask>"]),
    ("zzyzx <mask> qwxz", ["none of the words 'zzyzx', 'qwxz'", "3,997 words", "use everyday words"]),
    (" ".join(["very"] * 40) + " <mask>", ["41 words (the <mask> counted)", "windows of 32",
                                           "leave out 9 of them"]),
])
def test_a_bad_sentence_says_what_to_change(models, text, words):
    for name in ("masked_lm", "word_lm"):
        task, model = models[name]
        raises_saying(lambda task=task, model=model: contextual.guess_mask(model, task, text), words)


def test_unknown_words_are_read_as_unk_and_named(models):
    task, _ = models["masked_lm"]
    sentence = contextual.read_sentence(task, "the zzyzx was <mask>", masked=True)
    assert sentence.unknown == ("zzyzx",) and sentence.ids.tolist() == [3, UNK, task.index["was"], MASK]
    assert sentence.mask_at == 3


def manual_vectors(model, task, words, at):
    """The word at `at` through the model by hand: the embedding's row, then each block's output."""
    x = ids(task, words)[None]  # [1, T]
    h = model.positions(model.embedding(x))  # [1, T, d]
    mask = None if model.cfg.bidirectional else causal_mask(x.shape[1], torch.float64)
    rows = [model.embedding.weight[x[0, at]]]
    for block in model.blocks:
        h = block(h, mask=mask)  # [1, T, d]
        rows.append(h[0, at])
    return torch.stack(rows).detach()  # [L+1, d]


@pytest.mark.parametrize("name", ["masked_lm", "word_lm"])
def test_a_words_vector_at_every_layer_is_the_residual_stream_after_each_block(models, name):
    task, model = models[name]
    model.eval()
    found = contextual.word_in_context(model, task, A, "Bank")
    assert found.word == "bank" and found.position == 4
    assert found.labels == ("embedding", "after block 0", "after block 1")
    with torch.no_grad():
        expected = manual_vectors(model, task, found.sentence, 4)
    torch.testing.assert_close(found.vectors, expected, atol=1e-12, rtol=0)


def test_the_cosines_of_one_word_in_two_sentences_layer_by_layer(models):
    task, model = models["masked_lm"]
    model.eval()
    result = contextual.compare_contexts(model, task, "bank", A, B)
    with torch.no_grad():
        first = manual_vectors(model, task, tuple(A.split()), 4)
        second = manual_vectors(model, task, tuple(B.split()), 7)
    torch.testing.assert_close(result.cosines, F.cosine_similarity(first, second, dim=1), atol=1e-12, rtol=0)
    assert result.cosines[0].item() == pytest.approx(1.0, abs=1e-12)  # one embedding row in both
    assert (result.cosines[1:] < 1 - 1e-6).all()  # the context moves it
    assert result.static == pytest.approx(1.0, abs=1e-6) and result.labels[0] == "embedding"
    vocab = ("river", "bank", "money")
    static = torch.tensor([[1.0, 0.0, 2.0], [0.5, -3.0, 1.0], [0.0, 1.0, 0.0]])  # a word2vec table
    assert contextual.compare_contexts(model, task, "bank", A, B, static=(static, vocab)).static == \
        pytest.approx(1.0, abs=1e-6)


def test_a_bad_word_or_model_for_the_vectors_says_what_to_change(models):
    task, model = models["masked_lm"]
    raises_saying(lambda: contextual.word_in_context(model, task, A, "money"),
                  ["'money' is not a word of the sentence", "type a sentence that uses it"])
    raises_saying(lambda: contextual.word_in_context(model, task, A, "banke"),
                  ["'banke' is not in the vocabulary", "did you mean"])
    raises_saying(lambda: contextual.word_in_context(model, task, A, "the bank"), ["give one word"])
    raises_saying(lambda: contextual.word_in_context(model, task, "", "bank"), ["type a sentence"])
    lstm = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=8), task, seed=0)
    raises_saying(lambda: contextual.word_in_context(lstm, task, A, "bank"), ["no transformer blocks"])
    assert contextual.guess_mask(lstm, task, "the <mask> of").probs.shape == (len(task.vocab),)
    other = engine.make_task("charlm", seq_len=8)
    char_model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=8), other, seed=0)
    raises_saying(lambda: contextual.guess_mask(char_model, task, "the <mask> of"),
                  ["a model of the charlm task", "masked_lm or word_lm"])
