"""Transfer learning in the engine: transplant copies exactly the parts asked (row by row by symbol
where a part is indexed by the vocabulary), frozen parts stay bit for bit through training and get
no gradient, and a part's learning-rate scale is the rate its update is taken at."""
import dataclasses

import pytest
import torch

import engine
from engine.tasks.char_sentiment import ALPHABET, PAD, training_text
from engine.transfer import part_norms, snapshot, transplant

LSTM = engine.ModelConfig(arch="lstm", hidden_size=16, embedding_dim=8)
TRAIN = engine.TrainConfig(optimizer="adam", lr=1e-2, batch_size=8, clip_norm=1.0)


def source_and_target(cfg=LSTM):
    """A small char LM on Python source (trained a few steps, so its weights are not the seed's) and
    a char-level sentiment model of the same network."""
    lm = engine.make_task("charlm", seq_len=20)
    source = engine.build_model(cfg, lm, seed=1)
    engine.Trainer(source, lm, TRAIN).step(3)
    target_task = engine.make_task("char_sentiment", seq_len=30, train_reviews=64)
    return source, engine.build_model(cfg, target_task, seed=0), target_task


def test_transplant_copies_the_chosen_parts_and_maps_the_embedding_by_symbol():
    source, target, _ = source_and_target()
    before = snapshot(target)
    moved = transplant(source, target, ["embedding", "layer 0"])
    src, tgt = dict(source.named_parameters()), dict(target.named_parameters())
    for name in target.param_groups()["layer 0"]:
        assert torch.equal(tgt[name], src[name]), name
    for name in target.param_groups()["head"]:  # not asked: as built
        assert torch.equal(tgt[name], before[name]), name
    [embedding] = target.param_groups()["embedding"]
    for j, symbol in enumerate(target.vocab):
        expected = src[embedding][source.vocab.index(symbol)] if symbol in source.vocab else before[embedding][j]
        assert torch.equal(tgt[embedding][j], expected), symbol
    # Every character a review is written in is in Python's source; the padding symbol is not.
    assert (moved.shared_symbols, moved.symbols) == (len(ALPHABET), len(ALPHABET) + 1)
    assert PAD not in source.vocab


def test_a_language_models_head_maps_by_symbol_onto_another_corpus():
    """Python-source LM to a reviews LM: every row of the head (one per next character) is the
    source's row for that character."""
    source, _, _ = source_and_target()
    reviews = engine.make_task("charlm", corpus="reviews", seq_len=20)
    target = engine.build_model(LSTM, reviews, seed=0)
    transplant(source, target, ["embedding", "layer 0", "head"])
    rows = [source.vocab.index(ch) for ch in target.vocab]
    assert torch.equal(target.head.weight, source.head.weight[rows])
    assert torch.equal(target.head.bias, source.head.bias[rows])


def test_a_refused_transplant_copies_nothing():
    source, target, _ = source_and_target()
    before = snapshot(target)
    with pytest.raises(ValueError, match="head predicts 158 classes and the target's 2"):
        transplant(source, target, ["layer 0", "head"])
    task = source_and_target()[2]
    with pytest.raises(ValueError, match=r"weight_ih_l0 is \(64, 8\) in the source and \(32, 8\)"):
        transplant(source, engine.build_model(dataclasses.replace(LSTM, hidden_size=8), task), ["layer 0"])
    with pytest.raises(ValueError, match="the source is LSTM and the target GRU"):
        transplant(source, engine.build_model(dataclasses.replace(LSTM, arch="gru"), task), ["layer 0"])
    with pytest.raises(ValueError, match="no part named 'layer 3'"):
        transplant(source, target, ["layer 3"])
    for name, p in target.named_parameters():
        assert torch.equal(p, before[name]), name


def test_frozen_parts_stay_bit_for_bit_and_get_no_gradient():
    source, target, task = source_and_target()
    transplant(source, target, ["embedding", "layer 0"])
    start = snapshot(target)
    trainer = engine.Trainer(target, task, TRAIN)
    trainer.freeze("embedding", "layer 0")
    trainer.step(20)
    norms = part_norms(target, start)
    assert norms["embedding"] == (0.0, 0.0) and norms["layer 0"] == (0.0, 0.0)
    head_grad, head_moved = norms["head"]
    assert head_grad > 0 and head_moved > 0
    params = dict(target.named_parameters())
    for name in target.param_groups()["embedding"] + target.param_groups()["layer 0"]:
        assert torch.equal(params[name], start[name]) and params[name].grad is None, name
    # part_norms' gradient norm is the L2 norm over the part's gradients, as autograd left them.
    expected = torch.sqrt(sum(params[n].grad.square().sum() for n in target.param_groups()["head"])).item()
    assert head_grad == pytest.approx(expected, rel=1e-6)


def test_unfreezing_at_a_scaled_rate_takes_that_rate():
    """Plain SGD (no momentum, no clipping): each part's update is -lr x scale x its gradient."""
    _, model, task = source_and_target()
    sgd = dataclasses.replace(TRAIN, optimizer="sgd", lr=0.5, clip_norm=None)
    trainer = engine.Trainer(model, task, sgd)
    trainer.freeze("embedding")
    trainer.scale_lr({"layer 0": 0.1})
    before = snapshot(model)
    trainer.step(1)
    scales = {"embedding": 0.0, "layer 0": 0.1, "head": 1.0}
    params = dict(model.named_parameters())
    for part, names in model.param_groups().items():
        for name in names:
            grad = params[name].grad if params[name].grad is not None else torch.zeros_like(params[name])
            expected = before[name] - sgd.lr * scales[part] * grad
            assert torch.allclose(params[name], expected, rtol=0, atol=1e-7), name
    trainer.retune(dataclasses.replace(sgd, lr=0.2))  # a new rate keeps the scales
    assert {g["part"]: g["lr"] for g in trainer.optimizer.param_groups} == pytest.approx(
        {"embedding": 0.2, "layer 0": 0.02, "head": 0.2})
    with pytest.raises(ValueError, match="no part named 'decoder'"):
        trainer.scale_lr({"decoder": 0.1})


def test_the_char_sentiment_task_reads_the_reviews_last_characters():
    task = engine.make_task("char_sentiment", seq_len=40, train_reviews=50)
    assert task.train_x.shape == (50, 40)
    x = task.encode("The film was NOT good!")
    assert task.decode(x) == "the film was not good" and (x[:19] == 0).all()  # front-padded
    whole = engine.make_task("char_sentiment")  # the page's: every shipped review is shorter than 220
    assert len(whole.test_y) == 390 and (whole.train_x[:, 0] == 0).all()
    train, test = ({tuple(r) for r in x.tolist()} for x in (whole.train_x, whole.test_x))
    assert not train & test


def test_the_reviews_corpus_holds_no_held_out_review():
    task = engine.make_task("char_sentiment")
    corpus_lines = set(training_text().split("\n"))
    held_out = {task.decode(row) for row in task.test_x}
    assert len(corpus_lines) == len(task.train_y) and not corpus_lines & held_out
