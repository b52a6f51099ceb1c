"""The read-outs of word vectors against brute force in numpy: neighbours, analogies, axes, the
projection (numpy's SVD, then the sign rule), the word samples, and the Projector's TSV files
read back; and a token model's own embedding read out the same way."""
import numpy as np
import pytest
import torch

import engine
from engine.embeddings import (
    analogy,
    axis,
    cosines,
    ids_of,
    nearest,
    pca,
    projector_tsv,
    read_projector_tsv,
    sample_words,
    token_embedding,
)

VOCAB = tuple(f"w{i}" for i in range(40))


def vectors(seed=0, n=40, d=6) -> torch.Tensor:
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))  # [n, d]


def numpy_cosines(x: np.ndarray) -> np.ndarray:
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit @ unit.T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nearest_neighbours_are_numpys_highest_cosines(seed):
    x = vectors(seed)
    for word in ("w0", "w17", "w39"):
        row = VOCAB.index(word)
        sims = numpy_cosines(x.double().numpy())[row]
        order = [i for i in np.argsort(-sims, kind="stable") if i != row][:7]
        found = nearest(x, VOCAB, word, k=7)
        assert [w for w, _ in found] == [VOCAB[i] for i in order]
        np.testing.assert_allclose([s for _, s in found], sims[order], atol=1e-6)


@pytest.mark.parametrize("seed", [0, 3])
def test_analogies_are_numpys_3cosadd_without_the_query_words(seed):
    x = vectors(seed)
    a, b, c = 5, 9, 21
    unit = x.double().numpy() / np.linalg.norm(x.double().numpy(), axis=1, keepdims=True)
    target = unit[a] - unit[b] + unit[c]
    sims = unit @ target / np.linalg.norm(target)
    order = [i for i in np.argsort(-sims, kind="stable") if i not in (a, b, c)][:5]
    found = analogy(x, VOCAB, VOCAB[a], VOCAB[b], VOCAB[c], k=5)
    assert [w for w, _ in found] == [VOCAB[i] for i in order]
    np.testing.assert_allclose([s for _, s in found], sims[order], atol=1e-6)


def test_an_analogy_built_into_the_vectors_is_found():
    """king - man + woman: vectors made (of a royal, a male, a female and a person component) so
    that queen is exactly there, and king itself, nearer the target before the query words are
    left out than any word but queen, is not answered."""
    royal, male, female, person, fruit = torch.eye(5)
    vocab = ("king", "man", "woman", "queen", "apple")
    x = torch.stack([royal + male, male + person, female + person, royal + female, fruit])  # [5, 5]
    (best, cosine), *rest = analogy(x, vocab, "king", "man", "woman", k=2)
    assert best == "queen" and cosine == pytest.approx(1.0) and rest[0][0] == "apple"


def test_a_words_place_on_an_axis_is_its_projection_from_a_to_b():
    x = vectors(4)
    unit = x.double().numpy() / np.linalg.norm(x.double().numpy(), axis=1, keepdims=True)
    a, b = unit[3], unit[8]
    words = ["w3", "w8", "w0", "w30"]
    expected = [(unit[VOCAB.index(w)] - a) @ (b - a) / ((b - a) @ (b - a)) for w in words]
    place = axis(x, VOCAB, "w3", "w8", words)
    np.testing.assert_allclose(place.numpy(), expected, atol=1e-6)
    assert place[0].item() == pytest.approx(0, abs=1e-6) and place[1].item() == pytest.approx(1, abs=1e-6)
    assert torch.allclose(axis(x * 7.5, VOCAB, "w3", "w8", words), place, atol=1e-6)  # lengths do not matter
    with pytest.raises(ValueError, match="two different words"):
        axis(x, VOCAB, "w3", "w3", words)


def test_cosines_of_one_hot_vectors_are_the_identity():
    np.testing.assert_allclose(cosines(torch.eye(5), VOCAB[:5], VOCAB[:5]).numpy(), np.eye(5))
    x = vectors(5)
    np.testing.assert_allclose(cosines(x, VOCAB, ["w1", "w2", "w9"]).numpy(),
                               numpy_cosines(x.double().numpy())[np.ix_([1, 2, 9], [1, 2, 9])], atol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_projection_is_numpys_svd_up_to_the_sign_rule(seed):
    x = vectors(seed, n=30, d=8) * torch.tensor([5, 3, 1, 1, 1, 1, 1, 1.0])  # distinct leading components
    centred = x.double().numpy() - x.double().numpy().mean(0)
    U, S, _ = np.linalg.svd(centred, full_matrices=False)
    reference = U[:, :2] * S[:2]
    found = pca(x)
    for j in range(2):
        column = found.coords[:, j].double().numpy()
        sign = np.sign(column @ reference[:, j])
        np.testing.assert_allclose(column, sign * reference[:, j], atol=1e-4)
        assert column[np.abs(column).argmax()] > 0  # the farthest point on the positive side
    np.testing.assert_allclose(found.explained.numpy(), S[:2] ** 2 / (S**2).sum(), rtol=1e-5)
    flipped = pca(-x)  # the same cloud mirrored: the rule puts it back the same way
    torch.testing.assert_close(flipped.coords, found.coords, atol=1e-4, rtol=0)


def test_a_projection_needs_two_points():
    with pytest.raises(ValueError, match="at least 2 points"):
        pca(torch.zeros(1, 5))


def test_words_are_sampled_by_frequency_or_at_random_never_the_first_n():
    counts = torch.tensor([0, 5, 9, 9, 1, 0, 7, 2, 9, 3])  # rows 0 and 5: a padding and an unknown token
    assert sample_words(counts, 4, "frequent").tolist() == [2, 3, 6, 8]  # the 9s, then 7
    assert sample_words(counts, 3, "frequent").tolist() == [2, 3, 8]
    draws = [tuple(sample_words(counts, 4, "random", seed=s).tolist()) for s in range(20)]
    assert draws[0] == tuple(sample_words(counts, 4, "random", seed=0).tolist())  # seeded
    assert len(set(draws)) > 10 and all(len(set(d)) == 4 and not {0, 5} & set(d) for d in draws)
    assert sample_words(counts, 8, "random").tolist() == [1, 2, 3, 4, 6, 7, 8, 9]  # every eligible row
    with pytest.raises(ValueError, match="n must be between 1 and 8"):
        sample_words(counts, 9, "random")
    with pytest.raises(ValueError, match="how must be one of"):
        sample_words(counts, 2, "first")


def test_the_projector_files_read_back_exactly():
    x = vectors(6, n=12, d=5) * 1e-3
    vocab = tuple(f"word{i}" for i in range(11)) + ("two\twords",)
    rows, labels = projector_tsv(x, vocab)
    assert rows.count("\n") == labels.count("\n") == 12 and rows.splitlines()[0].count("\t") == 4
    assert labels.splitlines()[-1] == "two words"  # a tab would split the label's row
    back, back_vocab = read_projector_tsv(rows, labels)
    assert torch.equal(back, x)  # 9 significant digits give every float32 back
    assert back_vocab == vocab[:-1] + ("two words",)
    with pytest.raises(ValueError, match="one vector a word"):
        projector_tsv(x, vocab[:3])


def test_a_missing_word_is_named_with_spellings_that_exist():
    with pytest.raises(ValueError, match=r"'w41' is not in the vocabulary of 40 words; did you mean 'w4', 'w1'"):
        nearest(vectors(), VOCAB, "w41")
    with pytest.raises(ValueError, match="'zzz' is not in the vocabulary of 40 words$"):
        analogy(vectors(), VOCAB, "w1", "zzz", "w2")
    assert ids_of(VOCAB, ["w2", "w0"]).tolist() == [2, 0]


def test_a_token_models_embedding_reads_out_like_word2vec():
    task = engine.make_task("sentiment", seed=0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=8, embedding_dim=6), task)
    x, vocab = token_embedding(model)
    assert vocab == task.vocab and torch.equal(x, model.embedding.weight.detach())
    word = vocab[5]
    assert len(nearest(x, vocab, word, k=3)) == 3
    dates = engine.make_task("dates", seed=0)  # an encoder-decoder: the source's symbols
    translator = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, embedding_dim=4,
                                                       attention="additive"), dates)
    x, vocab = token_embedding(translator)
    assert vocab == dates.vocab and torch.equal(x, translator.source_embedding.weight.detach())
    values = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=8), engine.make_task("adding", seq_len=5))
    with pytest.raises(ValueError, match="reads values, not tokens"):
        token_embedding(values)
