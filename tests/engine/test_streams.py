"""One random stream per purpose, derived from a run's one seed: the same seed repeats a run,
and no purpose replays another's draws (dropout the initialisation's, the held-out batch the
probe samples, the coins the batches)."""
import pytest
import torch

import engine
from engine.rng import PURPOSES, PrivateRNG, stream, stream_seed


def draws(generator: torch.Generator, n: int = 64) -> torch.Tensor:
    return torch.rand(n, generator=generator)  # [n]


def test_each_purpose_has_its_own_repeatable_stream():
    for seed in (0, 1, 2**31 - 1):
        firsts = [draws(stream(seed, purpose)) for purpose in PURPOSES]
        for purpose, first in zip(PURPOSES, firsts):
            assert torch.equal(first, draws(stream(seed, purpose)))  # same seed, same draws
            assert not torch.equal(first, draws(stream(seed + 1, purpose)))
            assert not torch.equal(first, draws(torch.Generator().manual_seed(seed)))  # not the bare seed
        for i in range(len(firsts)):
            for j in range(i):
                assert not torch.equal(firsts[i], firsts[j]), (PURPOSES[i], PURPOSES[j])


def test_stream_seeds_are_stable_numbers_and_unknown_purposes_are_named():
    assert stream_seed(0, "batches") == stream_seed(0, "batches") < 2**63
    assert len({stream_seed(s, p) for s in range(50) for p in PURPOSES}) == 50 * len(PURPOSES)
    with pytest.raises(ValueError, match="purpose must be one of init, batches"):
        stream(0, "probes")
    with pytest.raises(ValueError, match="seed"):
        stream(-1, "probe")


def test_dropout_does_not_replay_the_initialisations_draws():
    """Building a model from the dropout stream's state would give the initial weights if the two
    streams were one (as when both were torch.manual_seed(seed))."""
    task = engine.make_task("adding", seq_len=6)
    cfg = engine.ModelConfig(arch="lstm", hidden_size=8, num_layers=2, dropout=0.5)
    model = engine.build_model(cfg, task, seed=4)
    trainer = engine.Trainer(model, task, engine.TrainConfig(seed=4))
    with trainer.dropout_rng.active():
        from_dropout_stream = type(model)(cfg, model.spec)
    for name, weight in from_dropout_stream.state_dict().items():
        assert not torch.equal(weight, model.state_dict()[name]), name
    with trainer.dropout_rng.active():
        masks = draws(None, 256)  # the global generator, as dropout draws it
    for init_seed in (4, stream_seed(4, "init")):  # build_model's seed, bare or as its own stream
        with PrivateRNG(init_seed).active():
            assert not torch.equal(masks, draws(None, 256))


def batches_of(task, trainer_call):
    """The batches task.batch hands out while trainer_call() runs."""
    seen, real = [], task.batch

    def batch(batch_size, generator=None):
        x, y = real(batch_size, generator)
        seen.append(x)
        return x, y

    task.batch = batch
    try:
        trainer_call()
    finally:
        task.batch = real
    return seen


def test_the_held_out_batch_is_not_the_probe_samples_nor_a_training_batch():
    task = engine.make_task("adding", seq_len=8)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(seed=7, batch_size=16))
    (held_out,) = batches_of(task, lambda: trainer.evaluate(16))
    probe = task.batch(16, stream(7, "probe"))[0]
    (training,) = batches_of(task, lambda: trainer.step(1))
    assert not torch.equal(held_out, probe) and not torch.equal(held_out, training)
    assert torch.equal(held_out, task.batch(16, stream(7, "held_out"))[0])
    assert torch.equal(training, task.batch(16, stream(7, "batches"))[0])
    (again,) = batches_of(task, lambda: trainer.evaluate(16))
    assert torch.equal(again, held_out)  # the same held-out batch at every evaluation


def test_scheduled_sampling_coins_do_not_replay_the_batches():
    task = engine.make_task("reverse")
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, embedding_dim=4), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(seed=3, scheduled_sampling=0.5))
    y = torch.zeros(16, 9)  # [B, T_out]
    coins = trainer.sampled(y)  # [B, T_out] the first flips
    assert torch.equal(coins, torch.rand(y.shape, generator=stream(3, "coins")) < 0.5)
    assert not torch.equal(coins, torch.rand(y.shape, generator=stream(3, "batches")) < 0.5)
