"""engine/context_bank.py and contextual.attention_of against the models themselves: the bank's vectors
against layer_vectors of the same windows, the nearest held-out words against a brute-force search,
Ethayarajh's self-similarity against its definition computed word by word, and each attention map
against engine.record's of the same sentence."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import engine
from engine import context_bank as cb
from engine.contextual import attention_of, layer_vectors, read_sentence, word_in_context
from engine.tasks.masked_lm import SPECIALS, UNK


@pytest.fixture(scope="module")
def trained():
    """A masked model trained 30 steps in float64 (its layers differ from their start), and its task."""
    task = engine.make_task("masked_lm", seed=0)
    model = engine.build_model(task.preset.model, task, seed=0)
    engine.Trainer(model, task, task.preset.train).step(30)
    return task, model.double()


@pytest.fixture(scope="module")
def bank(trained):
    task, model = trained
    return cb.context_bank(model, task, windows=32)


def test_the_bank_holds_every_held_out_words_vector_at_every_layer(trained, bank):
    task, model = trained
    windows = task.windows(task.held_out_starts(32))[:, :-1]  # [W, T]
    direct = layer_vectors(model, windows)  # [L+1, W, T, d]
    assert torch.equal(bank.ids, windows.flatten()) and bank.labels == ("embedding", "after block 0", "after block 1")
    torch.testing.assert_close(bank.vectors, F.normalize(direct.flatten(1, 2), dim=-1), atol=0, rtol=0)
    torch.testing.assert_close(direct[0], model.embedding.weight[windows].detach(), atol=0, rtol=0)


def test_nearest_is_a_brute_force_search_over_the_known_words(trained, bank):
    task, model = trained
    found = word_in_context(model, task, "they went down to the bank and sat by the water", "the")
    for layer in range(3):
        vector = found.vectors[layer]
        got = cb.nearest(bank, task, vector, layer, k=4)
        cosines = [(F.cosine_similarity(bank.vectors[layer, i], vector, dim=0).item(), i)
                   for i in range(bank.ids.numel()) if bank.ids[i] != UNK]
        best = sorted(cosines, reverse=True)[:4]
        assert [n.cosine for n in got] == pytest.approx([c for c, _ in best], abs=1e-12)
        assert [n.word for n in got] == [task.vocab[bank.ids[i]] for _, i in best]
        assert all(f"[{n.word}]" in n.context for n in got)
    # at the embedding the nearest is the word itself, wherever it occurs: one row, cosine 1
    assert all(n.word == "the" and n.cosine == pytest.approx(1.0) for n in cb.nearest(bank, task, found.vectors[0], 0))


def test_self_similarity_is_ethayarajhs_definition(bank):
    frame = cb.self_similarity(bank)
    assert list(frame.layer) == list(bank.labels)
    counts = torch.bincount(bank.ids, minlength=int(bank.ids.max()) + 1)
    counts[: len(SPECIALS)] = 0
    words = [w for w in counts.argsort(descending=True).tolist() if counts[w] >= 2][: cb.SIMILARITY_WORDS]
    for layer, row in enumerate(frame.itertuples()):
        per_word = []
        for word in words:
            rows = bank.vectors[layer][(bank.ids == word).nonzero().flatten()[: cb.PER_WORD]]
            pairs = [F.cosine_similarity(a, b, dim=0).item() for a, b in itertools.permutations(rows, 2)]
            per_word.append(sum(pairs) / len(pairs))
        assert row.same == pytest.approx(sum(per_word) / len(per_word), abs=1e-9)
        assert row.adjusted == pytest.approx(row.same - row.random, abs=1e-12)
    # one row a word at the embedding: every word's vectors are one vector, alike exactly
    assert frame.same[0] == pytest.approx(1.0, abs=1e-12)
    assert (frame.adjusted[1:] < frame.adjusted[0]).all()


def test_attention_of_is_the_recordings_attention(trained):
    task, model = trained
    sentence = read_sentence(task, "she was very <mask> to see him", masked=True)
    got = attention_of(model, sentence.ids).attention_traces
    rec = engine.record(model, sentence.ids[None], sentence.ids[None], jacobians=False)
    assert list(got) == list(rec.attention_traces)
    for site, trace in rec.attention_traces.items():
        torch.testing.assert_close(got[site].weights, trace.weights, atol=1e-12, rtol=0)
        assert got[site].weights.shape == (4, 7, 7)
