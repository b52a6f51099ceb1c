"""The translate task: Tatoeba's English-French pairs as engine.datasets finds them (every line with its
attribution; their figures by the engine's own rule), word vocabularies with <unk>, a held-out split of whole
source sentences, batches an encoder-decoder trains on, and sentences a student types."""
import re
import sys
from collections import Counter

import pytest
import torch

import engine
from engine import datasets
from engine.history import StepStats
from engine.losses import IGNORE
from engine.rng import stream
from engine.seq2seq import EOS as MODEL_EOS
from engine.seq2seq import SOS as MODEL_SOS
from engine.tasks.translate import (
    EOS,
    LARGE,
    PAD,
    SMALL,
    SPECIALS,
    UNK,
    read_pairs,
    shipped_pairs,
    tokenised_pairs,
    tokens,
    trimmed,
    word_count,
    words,
)
from engine.training import scored

# What Tatoeba's CC-BY 2.0 FR licence asks every pair to keep: both sentences' numbers and authors.
ATTRIBUTION = re.compile(r"CC-BY 2\.0 \(France\) Attribution: tatoeba\.org #\d+ \([^)]+\) & #\d+ \([^)]+\)")


@pytest.fixture(scope="module")
def task():
    return engine.make_task("translate", seed=0)


# ---------------------------------------------------------------- the shipped pairs


def test_every_pair_keeps_its_tatoeba_attribution():
    """The licence (CC-BY 2.0 FR) asks each pair to name its two sentences and their authors."""
    lines = datasets.corpus_text("eng-fra-5000").splitlines()
    assert len(lines) == len(shipped_pairs()) == 5_000
    for line in lines:
        english, french, attribution = line.split("\t")
        assert ATTRIBUTION.fullmatch(attribution), line
        assert 1 <= len(words(english)) <= 10 and 1 <= len(words(french)) <= 10
    assert lines[0] == "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272 (CM) & #1158250 (Wittydev)"


def test_the_pairs_figures_by_the_engines_rule(task):
    pairs = tokenised_pairs()
    english, french = Counter(t for e, _ in pairs for t in e), Counter(t for _, f in pairs for t in f)
    assert len({e for e, _ in pairs}) == 2_597
    assert len({f for _, f in pairs}) == 4_309
    assert english.total() == 17_260
    assert french.total() == 18_908
    assert len(english) == 1_212
    assert len(french) == 2_666
    assert len(task.references) == 260
    assert len(task.test_x) == 538
    assert len(task.train_x) == 4_462
    assert len(task.vocab) == 810
    assert len(task.target_vocab) == 1_123


def test_a_pair_file_that_is_not_tab_separated_is_refused_with_its_line():
    with pytest.raises(ValueError, match="line 2 .* two or three fields separated by tabs"):
        read_pairs("Hi.\tSalut.\tcredit\nHi. Salut. credit\n")


def test_a_pair_file_of_two_fields_takes_the_corpus_attribution():
    """manythings.org's 2017 file has no attribution column: its pairs carry the corpus's, as its terms ask."""
    assert read_pairs("Hi.\tSalut.\n", "the corpus's") == [("Hi.", "Salut.", "the corpus's")]
    large = shipped_pairs(LARGE)
    assert len(large) == 142_787 and large[0] == ("Go.", "Va !", datasets.CORPORA[LARGE].attribution)
    assert "manythings.org/anki and tatoeba.org" in large[0].attribution


def test_the_large_corpus_read_to_a_length_with_its_figures():
    """The 2017 file's pairs of at most max_words English words (the registry's count of its lengths: 1-5
    64,418; 6-10 70,131; 11-15 7,503; 16-20 624 (by its whitespace); the engine's rule counts words without
    punctuation marks), split by whole English sentences."""
    task = engine.make_task("translate", corpus=LARGE, seed=0)
    lengths = Counter(word_count(e) for e, _ in tokenised_pairs(LARGE))
    assert task.max_words == 20 and max(word_count(task.source_words(x)) for x in task.test_x) == 20
    assert len(task.train_x) + len(task.test_x) == sum(n for length, n in lengths.items() if length <= 20)
    assert (len(task.train_x), len(task.test_x), len(task.references)) == (128_556, 14_120, 9_856)
    short = engine.make_task("translate", corpus=LARGE, seed=0, max_words=10)
    assert len(short.train_x) + len(short.test_x) == sum(n for length, n in lengths.items() if length <= 10)
    assert task.public_corpus == LARGE and engine.make_task("translate").public_corpus == SMALL
    with pytest.raises(ValueError, match="max_words"):
        engine.make_task("translate", max_words=31)
    with pytest.raises(ValueError, match="reads the corpus eng-fra-5000 or eng-fra-2017, not 'eng-fra'"):
        engine.make_task("translate", corpus="eng-fra")


def test_tokens_are_lower_case_words_and_marks_with_french_typography_undone():
    assert tokens("Qu\u2019est-ce que c'est\u202f? I'm «\u00a0cold\u00a0».") == \
        ["qu'est-ce", "que", "c'est", "?", "i'm", "«", "cold", "»", "."]
    assert words("J'ai 20 ans !") == ["j'ai", "20", "ans"]


# ---------------------------------------------------------------- split and vocabularies


def test_no_source_sentence_is_both_trained_on_and_held_out():
    task = engine.make_task("translate", seed=0, min_count=1)  # a training sentence has no <unk>
    pairs = tokenised_pairs()
    train = {task.decode(x) for x in task.train_x}
    held = {task.decode(x) for x in task.reference_sources}
    assert not train & held
    assert len(task.train_x) + len(task.test_x) == len(pairs)
    assert len(task.references) == -(-len({e for e, _ in pairs}) // 10) == 260  # 10% of 2,597, rounded up
    # each held-out sentence comes with all its translations as references
    for source, refs in zip(task.reference_sources, task.references):
        english = task.decode(source)
        if "<unk>" not in english:
            assert sorted(refs) == sorted(" ".join(f) for e, f in pairs if " ".join(e) == english)
    assert sum(map(len, task.references)) == len(task.test_x) == 538


def test_the_split_is_drawn_by_the_seed(task):
    again, other = engine.make_task("translate", seed=0), engine.make_task("translate", seed=1)
    assert torch.equal(again.test_x, task.test_x) and again.vocab == task.vocab
    assert {tuple(x.tolist()) for x in other.reference_sources} != {tuple(x.tolist()) for x in task.reference_sources}


def test_the_held_out_pairs_are_shuffled_so_the_first_are_a_fair_subset(task):
    """The app scores the first held-out pairs its budget allows; the file is sorted by length."""
    lengths = [len(task.source_words(x)) for x in task.test_x]
    first = lengths[:100]
    assert first != sorted(first) and min(first) <= 2 and max(first) >= 4
    assert [task.decode(x) for x in task.reference_sources] != sorted(task.decode(x) for x in task.reference_sources)


def test_vocabularies_come_from_the_training_pairs_with_rare_words_unknown(task):
    assert task.vocab[:4] == task.target_vocab[:4] == SPECIALS == ("<s>", "</s>", "<pad>", "<unk>")
    assert (task.target_vocab.index("<s>"), task.target_vocab.index("</s>")) == (MODEL_SOS, MODEL_EOS)
    train = [task.source_words(x) for x in task.train_x]
    counts = Counter(t for sentence in train for t in sentence)
    assert all(counts[w] >= 2 for w in task.vocab[4:])
    french = Counter(t for y in task.train_y for t in task.target_words(y))
    assert all(french[w] >= 2 for w in task.target_vocab[4:])
    # a word seen once in training is <unk> at min_count 2 and a word at min_count 1
    everything = engine.make_task("translate", seed=0, min_count=1)
    once = Counter(t for x in everything.train_x for t in everything.source_words(x))
    rare = sorted(w for w, n in once.items() if n == 1)
    assert len(rare) > 100 and not set(rare) & set(task.vocab)
    assert len(everything.vocab) == len(task.vocab) + len(rare)
    # a word only in held-out sentences is in no vocabulary, even at min_count 1
    held_only = {t for x in everything.reference_sources for t in everything.source_words(x)} - set(once)
    assert held_only == {"<unk>"}


def test_min_count_is_checked():
    with pytest.raises(ValueError, match="min_count"):
        engine.make_task("translate", min_count=0)


# ---------------------------------------------------------------- batches


def test_batches_are_what_an_encoder_decoder_reads_and_writes(task):
    x, y = task.batch(64)
    S, T = task.source_len, task.spec.out_len
    assert x.shape == (64, S) == (64, 7) and y.shape == (64, T) == (64, 12)
    assert x.dtype == y.dtype == torch.int64
    # a training step cuts it to the batch's longest sentence on each side: no column is padding on every row
    cut_x, cut_y = task.cut(x, y)
    assert torch.equal(cut_x, x[:, : cut_x.shape[1]]) and torch.equal(cut_y, y[:, : cut_y.shape[1]])
    assert (cut_x[:, -1] != PAD).any() and (cut_y[:, -1] != IGNORE).any()
    assert (x[:, cut_x.shape[1]:] == PAD).all() and (y[:, cut_y.shape[1]:] == IGNORE).all()
    for xs, ys in zip(x.tolist(), y.tolist()):
        n = xs.index(EOS)
        assert PAD not in xs[:n] and set(xs[n + 1 :]) <= {PAD}  # </s> ends the words, pads after it
        m = ys.index(MODEL_EOS)
        assert IGNORE not in ys[:m] and set(ys[m + 1 :]) <= {IGNORE}
    assert task.spec.padded(x).tolist() == (x == PAD).tolist()


def test_a_batch_holds_sentences_of_one_length_drawn_as_often_as_the_corpus_has_them():
    """by_length: every batch's English sentences are of one length (so it has no padding to compute), and over
    many batches each length is drawn in proportion to its share of the training sentences."""
    task = engine.make_task("translate", corpus=LARGE, seed=0)
    lengths = (task.train_x != PAD).sum(dim=1)  # [N]
    share = {n: float((lengths == n).float().mean()) for n in lengths.unique().tolist()}
    drawn = Counter()
    for _ in range(2_000):
        x, y = task.cut(*task.batch(4))
        assert (x != PAD).all()  # all one length: nothing left to cut
        drawn[x.shape[1]] += 1
    assert set(drawn) <= set(share)
    for n, p in share.items():  # binomial, 2,000 draws: 4 standard deviations
        assert abs(drawn[n] / 2_000 - p) <= 4 * (p * (1 - p) / 2_000) ** 0.5 + 1e-9, n
    mixed = engine.make_task("translate", corpus=LARGE, seed=0, by_length=False)
    widths = {mixed.cut(*mixed.batch(16))[0].shape[1] for _ in range(50)}
    assert len(widths) > 1 and max(widths) < mixed.source_len  # random rows, still cut to their longest


def test_a_cut_batch_trains_exactly_as_the_padded_one():
    """The columns a batch is cut by are padding on every row: the encoder skips them and the loss reads none,
    so the loss and every gradient are the padded batch's (to float32 rounding)."""
    task = engine.make_task("translate", seed=0, by_length=False)
    rows = torch.arange(0, 40)  # [40]
    padded_x, padded_y = task.train_x[rows], task.train_y[rows]  # [40, 7], [40, 12]
    x, y = trimmed(padded_x, padded_y)
    assert x.shape[1] < padded_x.shape[1] and y.shape[1] < padded_y.shape[1]
    cfg = engine.ModelConfig(arch="gru", hidden_size=16, embedding_dim=8, bidirectional=True, attention="dot")
    model = engine.build_model(cfg, task, seed=0)
    grads = []
    for xs, ys in ((padded_x, padded_y), (x, y)):
        model.zero_grad()
        loss = task.loss(model(xs, ys), ys)
        loss.backward()
        grads.append((loss.detach(), [p.grad.clone() for p in model.parameters()]))
    (loss_padded, g_padded), (loss_cut, g_cut) = grads
    torch.testing.assert_close(loss_cut, loss_padded)
    for a, b in zip(g_cut, g_padded):
        torch.testing.assert_close(a, b)


def test_a_training_step_trains_on_the_batch_cut(monkeypatch):
    """Trainer.step hands each step the task's next batch from its "batches" stream, cut (TranslateTask.cut)."""
    task = engine.make_task("translate", seed=0)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, embedding_dim=4, attention="dot"), task)
    trainer = engine.Trainer(model, task, engine.TrainConfig(batch_size=16, seed=3))
    read = []

    def recorded(x, y):
        read.append((x, y))
        return StepStats(len(read), 1.0, 0.5, 1.0, 1.0, diverged=False)

    monkeypatch.setattr(trainer, "train_step", recorded)
    trainer.step(3)
    batches = stream(3, "batches")
    drawn = [task.batch(16, batches) for _ in read]  # each [16, 7], [16, 12]
    for (x, y), (drawn_x, drawn_y) in zip(read, drawn):
        assert torch.equal(x, drawn_x[:, : x.shape[1]]) and torch.equal(y, drawn_y[:, : y.shape[1]])
        assert (drawn_x[:, x.shape[1]:] == PAD).all() and (drawn_y[:, y.shape[1]:] == IGNORE).all()
    assert sum(x.numel() + y.numel() for x, y in read) < sum(x.numel() + y.numel() for x, y in drawn)


@pytest.mark.parametrize("attention", ["dot", "additive", None])
def test_the_output_layer_at_the_translations_words_only_gives_the_full_loss_and_gradients(attention):
    """engine.training.scored: training computes the head at the steps with a target only (a batch's shorter
    translations end early); loss and gradients are the full output's with IGNORE's steps left out."""
    task = engine.make_task("translate", seed=0)
    cfg = engine.ModelConfig(arch="gru", hidden_size=16, embedding_dim=8, bidirectional=True, attention=attention)
    model = engine.build_model(cfg, task, seed=0)
    x, y = task.batch(32)
    results = []
    for route in ("full", "targets"):
        model.zero_grad()
        y_hat, targets = (model(x, y), y) if route == "full" else scored(model, task, x, y, teacher_forced=True)
        loss = task.loss(y_hat, targets)
        loss.backward()
        gradients = [p.grad.clone() for p in model.parameters()]
        results.append((loss.detach(), task.metric(y_hat.detach(), targets), gradients))
    (loss_full, metric_full, g_full), (loss_at, metric_at, g_at) = results
    assert targets.dim() == 1 and len(targets) == int((y != IGNORE).sum())
    torch.testing.assert_close(loss_at, loss_full)
    assert metric_at == pytest.approx(metric_full)
    for a, b in zip(g_at, g_full):
        torch.testing.assert_close(a, b)
    # held out, a decoder reads its own outputs: scored decodes freely, every step
    model.eval()
    free, all_targets = scored(model, task, x, y)
    assert free.shape == (32, task.spec.out_len, task.spec.output_size) and all_targets is y


def test_the_batches_decode_to_the_shipped_sentences():
    task = engine.make_task("translate", seed=0, min_count=1)  # no training word is <unk>
    pairs = {(" ".join(e), " ".join(f)) for e, f in tokenised_pairs()}
    x, y = task.batch(200)
    for xs, ys in zip(x, y):
        assert (task.decode(xs), task.decode_target(ys)) in pairs
    assert task.decode_target(torch.tensor([task.target_vocab.index("je"), 5, MODEL_EOS, 9])) == \
        f"je {task.target_vocab[5]}"


# ---------------------------------------------------------------- sentences a student types


def test_a_typed_sentence_is_read_with_unknown_words_named(task):
    x = task.encode("I'm  cold!")
    assert x.shape == (task.source_len,) and task.decode(x) == "i'm cold !"
    assert task.unknown_words("I'm zyzzyva.") == ["zyzzyva"]
    assert task.encode("I'm zyzzyva.").tolist()[:4] == [task.vocab.index("i'm"), UNK, task.vocab.index("."), EOS]


@pytest.mark.parametrize("text, says", [
    ("", "at least one word"),
    ("  ?! ", "at least one word"),
    ("zyzzyva quux", "none of 'zyzzyva', 'quux' is in the model's English vocabulary"),
    ("I am very cold and tired today", "7 words and marks; the model reads at most 6"),
])
def test_a_typed_sentence_it_cannot_read_is_refused_saying_what_to_change(task, text, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        task.encode(text)


# ---------------------------------------------------------------- with a model


def test_a_model_carries_the_source_vocabulary_and_refuses_another_split(task, tmp_path):
    cfg = engine.ModelConfig(arch="gru", hidden_size=8, embedding_dim=4, attention="dot")
    model = engine.build_model(cfg, task, seed=0)
    assert model.vocab == task.vocab and model.spec.output_size == len(task.target_vocab)
    loaded = engine.load(engine.save(model, tmp_path / "m.safetensors"))
    assert loaded.vocab == task.vocab
    engine.Trainer(loaded, task, engine.TrainConfig(batch_size=8))  # the same task: taken
    other = engine.make_task("translate", seed=1)
    if other.spec == task.spec:
        with pytest.raises(ValueError, match="token ids mean other tokens"):
            engine.Trainer(loaded, other, engine.TrainConfig(batch_size=8))
    else:
        with pytest.raises(ValueError, match="this model was built for a translate task"):
            engine.Trainer(loaded, other, engine.TrainConfig(batch_size=8))


def test_the_task_is_made_by_name_with_its_parameters():
    assert engine.task_params("translate") == {"seed": 0, "corpus": SMALL, "max_words": 20, "min_count": 2,
                                               "by_length": True}
    assert "translate" in engine.ATTENTION_TASKS and engine.TASKS["translate"].decodes
    assert sys.modules["engine.tasks.translate"].TranslateTask is engine.TASKS["translate"]


# ---------------------------------------------------------------- a short training (the full tier)


@pytest.mark.training
def test_a_gru_with_attention_learns_to_translate_in_a_few_hundred_steps():
    """A GRU encoder-decoder with dot attention (H=64), 600 steps (12 s on one core, 30 s on a busy
    machine): the mean loss of the last 50 steps under two thirds of the first 50's (measured 4.53
    -> 1.65), and the held-out BLEU (measured 8.08 greedy, 8.99 with a beam of 3) past three times
    the best constant translation's (the most frequent training target, `je suis <unk> .`, for
    every sentence: 0.97) and the empty translation's 0."""
    from engine.bleu import corpus_bleu, held_out_bleu

    task = engine.make_task("translate", seed=0)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=64, embedding_dim=32, attention="dot"),
                               task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=64,
                                                             clip_norm=1.0, seed=0))
    losses = [s.loss for s in trainer.step(600)]
    first, last = sum(losses[:50]) / 50, sum(losses[-50:]) / 50
    assert last < 0.66 * first, (first, last)
    common = Counter(task.decode_target(y) for y in task.train_y).most_common(1)[0][0]
    empty = corpus_bleu([""] * len(task.references), task.references)
    constant = corpus_bleu([common] * len(task.references), task.references)
    assert (common, empty, round(constant, 2)) == ("je suis <unk> .", 0.0, 0.97)
    greedy, beam = held_out_bleu(model, task), held_out_bleu(model, task, width=3)
    assert greedy > 3 * constant and beam > 3 * constant, (greedy, beam)
