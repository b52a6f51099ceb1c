"""engine.tsne: a t-SNE map through openTSNE, started from the points' own PCA, the same map for the
same points; and the prose corpus made once, read-only, for every run to share."""
import numpy as np
import pytest
import torch
from openTSNE import initialization

from engine import embeddings as readouts
from engine.prose import prose_words
from engine.tsne import MIN_POINTS, TSNEConfig, initial, perplexity_for, tsne
from engine.word2vec import Word2Vec, Word2VecConfig, make_corpus

QUICK = TSNEConfig(early_iter=100, iter=150)


def clusters(per: int = 20, d: int = 10, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """[3 * per, d] points around three far-apart centres, and each point's cluster [3 * per]."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.eye(3, d) * 10  # [3, d]
    label = torch.arange(3).repeat_interleave(per)  # [3 * per]
    return centres[label] + torch.randn(3 * per, d, generator=g), label


def test_the_map_starts_from_the_points_pca_scaled_as_opentsne_scales_it():
    points, _ = clusters()
    start = initial(points)
    flat = readouts.pca(points).coords.double().numpy()
    assert start == pytest.approx(initialization.rescale(flat))
    assert np.std(start[:, 0]) == pytest.approx(1e-4)
    assert start / flat == pytest.approx(np.full_like(flat, start[0, 0] / flat[0, 0]))  # one scale, signs kept


def test_the_same_points_give_the_same_map_to_the_last_bit():
    points, _ = clusters()
    first, again = tsne(points, QUICK), tsne(points.clone(), QUICK)
    assert first.shape == (60, 2) and first.dtype == torch.float32
    assert torch.equal(first, again)


def test_each_point_keeps_its_cluster_as_nearest_neighbours_on_the_map():
    points, label = clusters()
    flat = tsne(points, QUICK)
    distance = torch.cdist(flat, flat)  # [60, 60]
    distance.fill_diagonal_(float("inf"))
    nearest = distance.topk(5, largest=False).indices  # [60, 5]
    assert (label[nearest] == label[:, None]).all()  # every point's 5 nearest on the map are of its cluster


def test_maps_of_nearby_vectors_look_alike_because_both_start_from_pca():
    points, _ = clusters()
    g = torch.Generator().manual_seed(1)
    moved = points + 0.05 * torch.randn(points.shape, generator=g)  # the vectors a few steps later
    a, b = tsne(points, QUICK), tsne(moved, QUICK)
    for axis in range(2):  # the same orientation: no flip or swap of axes between the two
        assert np.corrcoef(a[:, axis], b[:, axis])[0, 1] > 0.95


def test_the_perplexity_is_cut_for_few_points_and_too_few_are_refused():
    assert perplexity_for(1000) == 30 and perplexity_for(31) == 10
    assert tsne(torch.randn(MIN_POINTS, 4)).shape == (MIN_POINTS, 2)
    with pytest.raises(ValueError, match="at least 5 points"):
        tsne(torch.randn(4, 4))
    with pytest.raises(ValueError, match="gradient must be one of bh, fft"):
        TSNEConfig(gradient="exact")


def test_a_corpus_is_read_only_and_a_run_on_it_trains_as_one_on_the_tokens():
    corpus = make_corpus(prose_words(), 5)
    assert len(corpus.words) == 4501 and len(corpus.ids) == 429_483
    first = corpus.ids[:3].tolist()
    for write in (lambda: corpus.ids.__setitem__(0, 7), lambda: corpus.ids.__iadd__(1),
                  lambda: corpus.counts.__imul__(2), lambda: np.copyto(corpus.ids, 0)):
        with pytest.raises(ValueError, match="read-only"):
            write()
    assert corpus.ids[:3].tolist() == first == make_corpus(prose_words(), 5).ids[:3].tolist()  # unchanged
    cfg = Word2VecConfig(dim=10)
    shared, own = Word2Vec(corpus, cfg), Word2Vec(prose_words(), cfg)
    shared.step(5)
    own.step(5)
    assert shared.ids is corpus.ids and torch.equal(shared.vectors(), own.vectors())
    shared.vocab.counts[0] = 0  # a run's counts are its own copy
    assert corpus.counts[0] == own.vocab.counts[0] == 15_817  # "the"
    with pytest.raises(ValueError, match="the corpus keeps words seen 5 times, the config asks min_count=3"):
        Word2Vec(corpus, Word2VecConfig(min_count=3))
