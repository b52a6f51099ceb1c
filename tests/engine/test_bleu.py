"""engine.bleu: sacrebleu's corpus BLEU with each hypothesis's own references, and the held-out
BLEU of a translation model, greedy and by beam search."""
import pytest
import sacrebleu
import torch

import engine
from engine.bleu import bleu_by_length, corpus_bleu, held_out_bleu, translate
from engine.seq2seq import EOS
from engine.tasks.translate import word_count

HYPOTHESES = ["je suis là .", "il fait froid .", "merci !"]
REFERENCES = [["je suis ici .", "je suis là ."], ["il fait froid ."], ["merci beaucoup !", "merci !", "merci ."]]


def test_corpus_bleu_is_sacrebleus_own_figure_with_each_sentences_references():
    """Every hypothesis matches one of its references word for word: BLEU 100. A wrong word in the
    first gives sacrebleu's figure for the same streams (references padded with None where a
    sentence has fewer), and the definition's by hand: each hypothesis's closest reference length
    is its own (BP = 1); p_1 = 9/10, p_2 = 5/7, p_3 = 2/4, p_4 = 1/2 (only `il fait froid .` has
    its 3- and 4-grams, `je suis très .` keeps `je suis` of its bigrams)."""
    assert corpus_bleu(HYPOTHESES, REFERENCES) == pytest.approx(100.0)
    hypotheses = ["je suis très .", *HYPOTHESES[1:]]
    streams = [["je suis ici .", "il fait froid .", "merci beaucoup !"], ["je suis là .", None, "merci !"],
               [None, None, "merci ."]]
    expected = sacrebleu.corpus_bleu(hypotheses, streams, tokenize="none", force=True).score
    by_hand = 100 * (9 / 10 * 5 / 7 * 2 / 4 * 1 / 2) ** 0.25
    assert corpus_bleu(hypotheses, REFERENCES) == pytest.approx(expected) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(63.3160, abs=1e-4)


def test_the_hand_example_by_the_definition():
    """BLEU = BP * exp(mean log p_n): two hypotheses of 4 and 3 tokens, one reference each of the
    same lengths (BP = 1); p_1 = 6/7, p_2 = 3/5, p_3 = 1/3, p_4 = 1/1 (only the first has a 4-gram)."""
    hypotheses, references = ["a b c d", "e f g"], [["a b c d"], ["e x g"]]
    # unigrams: 4 + 2 of 7; bigrams: 3 + 0 of 5; trigrams: 2 + 0 of 3; 4-grams: 1 of 1
    by_hand = 100 * ((6 / 7) * (3 / 5) * (2 / 3) * (1 / 1)) ** 0.25
    assert corpus_bleu(hypotheses, references) == pytest.approx(by_hand, rel=1e-9) == pytest.approx(76.5206, abs=1e-4)


def test_a_perfect_translation_scores_100_and_an_empty_one_0():
    task = engine.make_task("translate", seed=0)
    firsts = [refs[0] for refs in task.references]
    assert corpus_bleu(firsts, task.references) == pytest.approx(100.0)
    assert corpus_bleu([""] * len(firsts), task.references) == 0.0


@pytest.mark.parametrize("hypotheses, references, says", [
    (["a"], [["a"], ["b"]], "1 hypotheses and 2 reference lists"),
    (["a", "b"], [["a"], []], "at least one reference"),
    ([], [], "at least one reference"),
])
def test_mismatched_input_is_refused(hypotheses, references, says):
    with pytest.raises(ValueError, match=says):
        corpus_bleu(hypotheses, references)


class Oracle(torch.nn.Module):
    """Given the task's held-out sources in order, writes for each its first reference as the task
    reads it (rare words as <unk>), then </s>: a model whose decodings are known."""

    def __init__(self, task):
        super().__init__()
        self.task, self.spec = task, task.spec
        index = {w: i for i, w in enumerate(task.target_vocab)}
        self.targets = [[index.get(w, 3) for w in refs[0].split()] + [EOS] for refs in task.references]

    def forward(self, x):
        """x: held-out sources in order (decoded GREEDY_CHUNK at a time), or any of them (chosen by length): then
        two sources read alike (their differing words both <unk>) are given the first one's reference."""
        logits = torch.zeros(x.shape[0], self.spec.out_len, self.spec.output_size)  # [B, T_out, V]
        sources = self.task.reference_sources
        rows = {}
        for i, row in enumerate(sources):
            rows.setdefault(tuple(row.tolist()), i)
        first = rows[tuple(x[0].tolist())]
        in_order = torch.equal(x, sources[first : first + len(x)])
        for b, source in enumerate(x):
            target = self.targets[first + b if in_order else rows[tuple(source.tolist())]]
            for t in range(self.spec.out_len):
                logits[b, t, target[min(t, len(target) - 1)]] = 1.0
        return logits


def test_held_out_bleu_scores_the_greedy_decodings_against_every_reference():
    task = engine.make_task("translate", seed=0)
    oracle = Oracle(task)
    written = translate(oracle, task, task.reference_sources)
    assert [" ".join(w) for w in written] == [" ".join(task.target_vocab[i] for i in t[:-1]) for t in oracle.targets]
    with_unk = sum("<unk>" in w for w in written)
    assert with_unk > 0  # held-out references hold words the training pairs lack
    expected = corpus_bleu([" ".join(w) for w in written], task.references)
    assert held_out_bleu(oracle, task) == pytest.approx(expected) and 50 < expected < 100
    first = corpus_bleu([" ".join(w) for w in written[:100]], task.references[:100])
    assert held_out_bleu(oracle, task, sentences=100) == pytest.approx(first) != pytest.approx(expected)


def test_beam_of_width_1_decodes_as_greedy_and_a_wider_beam_scores_its_own_decodings():
    task = engine.make_task("translate", seed=0)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=16, embedding_dim=8, attention="dot"),
                               task, seed=0)
    # untrained: its random weights write words (a trained one, short sentences and </s>)
    sources = task.reference_sources[:40]
    greedy = translate(model, task, sources)
    assert translate(model, task, sources, width=1) == greedy
    beam = [task.target_words(engine.beam_search(model, x, 1).best.tokens) for x in sources]
    assert beam == greedy
    wide = translate(model, task, sources, width=3)
    assert wide == [task.target_words(engine.beam_search(model, x, 3).best.tokens) for x in sources]
    assert greedy[0] and sum(w != g for w, g in zip(wide, greedy)) > 0  # a wider beam finds other ones
    assert held_out_bleu(model, task, width=3) == pytest.approx(
        corpus_bleu([" ".join(w) for w in translate(model, task, task.reference_sources, 3)], task.references))


def test_bleu_by_length_scores_the_first_sentences_of_each_length_against_their_references():
    """engine.bleu.bleu_by_length: each span's first `most` held-out sentences (by their words, punctuation not
    counted), their decodings scored against their own references only."""
    task = engine.make_task("translate", corpus="eng-fra-2017", max_words=12, seed=0)
    oracle = Oracle(task)
    measured = bleu_by_length(oracle, task, most=40)
    assert list(measured) == [(1, 5), (6, 10), (11, 15)]  # no sentence of 16-20 words at max_words 12
    for (low, high), (n, score) in measured.items():
        group = [i for i, length in enumerate(task.reference_lengths) if low <= length <= high][:40]
        assert n == len(group) == 40
        assert all(word_count(task.source_words(task.reference_sources[i])) == task.reference_lengths[i]
                   for i in group)
        written = translate(oracle, task, task.reference_sources[group])
        assert score == pytest.approx(corpus_bleu([" ".join(w) for w in written], [task.references[i] for i in group]))
