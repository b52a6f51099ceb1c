"""Word vectors as an embedding's start (engine/word_vectors.py): each word's row is its vector at
the norm of nn.Embedding's start, every other row is the seed's, and the file holds them whole."""
import math
import pickle

import pytest
import torch
from torch import nn

from engine.word_vectors import WordVectors, from_bytes, scaled, start_embedding, to_bytes

VOCAB = ("<pad>", "<unk>", "good", "film", "dull", "phone")


def vectors(seed: int = 0, d: int = 4) -> WordVectors:
    words = ("dull", "good", "the", "film")  # another order than the vocabulary's; "phone" absent
    return WordVectors(words, torch.randn(len(words), d, generator=torch.Generator().manual_seed(seed)),
                       {"name": "test"})


def test_each_word_starts_at_its_vector_scaled_and_the_rest_as_the_seed_made_them():
    found = vectors()
    torch.manual_seed(0)
    embedding = nn.Embedding(len(VOCAB), 4)
    before = embedding.weight.detach().clone()
    covered = start_embedding(embedding, VOCAB, found)
    assert (covered.found, covered.words, covered.missing) == (3, 4, ("phone",))
    for word in ("good", "film", "dull"):
        v = found.vectors[found.words.index(word)]
        expected = v * (2.0 / v.norm())  # sqrt(4) = 2
        torch.testing.assert_close(embedding.weight[VOCAB.index(word)], expected)
        assert embedding.weight[VOCAB.index(word)].norm().item() == pytest.approx(2.0, rel=1e-6)
    for token in ("<pad>", "<unk>", "phone"):
        assert torch.equal(embedding.weight[VOCAB.index(token)], before[VOCAB.index(token)])


def test_scaled_rows_have_the_norm_of_a_standard_normal_start():
    rows = scaled(torch.randn(100, 50) * 0.01)
    torch.testing.assert_close(rows.norm(dim=1), torch.full((100,), math.sqrt(50)))
    start = nn.Embedding(20_000, 50).weight.detach()  # N(0, 1): E|x|^2 = d
    assert start.norm(dim=1).pow(2).mean().item() == pytest.approx(50, rel=0.02)


def test_other_dimensions_are_refused_with_nothing_copied():
    embedding = nn.Embedding(len(VOCAB), 8)
    before = embedding.weight.detach().clone()
    with pytest.raises(ValueError, match="embedding_dim=4"):
        start_embedding(embedding, VOCAB, vectors(d=4))
    assert torch.equal(embedding.weight, before)


def test_the_file_holds_the_vectors_their_words_and_what_made_them():
    found = vectors()
    back = from_bytes(to_bytes(found))
    assert back.words == found.words and back.about == found.about
    assert torch.equal(back.vectors, found.vectors)


@pytest.mark.parametrize("what", ["empty", "text", "pickle"])
def test_anything_else_is_refused_unread(what):
    data = {"empty": b"", "text": b"not a file at all", "pickle": pickle.dumps({"vectors": torch.zeros(2, 2)})}[what]
    with pytest.raises(ValueError, match="not a word-vector file"):
        from_bytes(data)
