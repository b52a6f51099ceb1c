"""Trainer: optimizers, clipping, truncated BPTT, seeds, freezing, and divergence as a lesson."""
import math
import threading
import time

import pytest
import torch

import engine

from .cases import overflow_updates


def small(arch="lstm", task_name="adding", seed=0, **model_kw):
    task = engine.make_task(task_name, seq_len=20, seed=seed)
    torch.manual_seed(seed)
    model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=16, **model_kw), task)
    return model, task


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam", "rmsprop"])
def test_every_optimizer_lowers_the_loss_on_sine_forecasting(optimizer):
    task = engine.make_task("sine", seq_len=30)
    torch.manual_seed(0)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=16), task)
    lr = {"sgd": 0.5, "momentum": 0.05, "adam": 1e-2, "rmsprop": 3e-3}[optimizer]
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer=optimizer, lr=lr, batch_size=32))
    before, _ = trainer.evaluate()
    trainer.step(60)
    after, _ = trainer.evaluate()
    assert after < 0.7 * before
    assert trainer.status == "trained 60 steps"


def test_step_returns_one_stat_per_step_with_the_global_gradient_norm():
    model, task = small()
    trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-3, batch_size=8, seed=3))
    x, y = task.batch(8, engine.rng.stream(3, "batches"))  # the trainer's first batch
    loss = task.loss(model(x), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    expected_norm = torch.sqrt(sum((g**2).sum() for g in grads)).item()
    stats = trainer.step(5)
    assert [s.step for s in stats] == [1, 2, 3, 4, 5]
    assert stats[0].loss == pytest.approx(loss.item(), rel=1e-5)
    assert stats[0].grad_norm == pytest.approx(expected_norm, rel=1e-4)
    assert stats[0].grad_norm_clipped == stats[0].grad_norm  # clipping off
    columns = ["step", "loss", "metric", "grad_norm", "grad_norm_clipped", "diverged"]
    assert list(trainer.history_frame().columns) == columns


def test_clipping_by_norm_caps_the_applied_gradient():
    model, task = small(arch="rnn", activation="relu")
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=0.01, clip_norm=0.05))
    for s in trainer.step(10):
        assert s.grad_norm_clipped == pytest.approx(min(s.grad_norm, 0.05), rel=1e-4)
    assert any(s.grad_norm > 0.05 for s in trainer.history)


def test_clipping_by_value_bounds_every_entry_of_the_update():
    model, task = small()
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=1e-3, clip_value=1e-4))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    stats = trainer.step(1)[0]
    assert stats.grad_norm_clipped < stats.grad_norm
    for n, p in model.named_parameters():  # SGD moved each entry by at most lr * clip_value
        assert (p.detach() - before[n]).abs().max().item() <= 1e-3 * 1e-4 + 3e-8  # + float32 spacing
    assert max(p.grad.abs().max().item() for p in model.parameters()) <= 1e-4


def test_truncated_bptt_cuts_the_gradient_at_the_window():
    """With window k, the loss of a seq2vec task reaches only the inputs of the last chunk."""
    model, task = small(arch="gru")
    x, y = task.batch(4)
    x.requires_grad_(True)
    trainer = engine.Trainer(model, task, engine.TrainConfig(bptt_window=6))
    trainer.forward_backward(x, y)
    reached = x.grad.abs().sum(dim=(0, 2))  # [T]
    assert torch.all(reached[:18] == 0)  # chunks [0,6) [6,12) [12,18) get nothing
    assert torch.all(reached[18:] > 0)  # the last chunk [18, 20)
    x.grad = None
    engine.Trainer(model, task, engine.TrainConfig(bptt_window=0)).forward_backward(x, y)
    assert torch.all(x.grad.abs().sum(dim=(0, 2))[1:] > 0)


def test_truncated_bptt_on_an_aligned_task_keeps_the_full_forward_pass():
    """Truncation changes the gradient, not the prediction: the state still crosses chunks."""
    task = engine.make_task("charlm", seq_len=24)
    torch.manual_seed(0)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=8), task)
    x, y = task.batch(3)
    trainer = engine.Trainer(model, task, engine.TrainConfig(bptt_window=5))
    model.train()
    loss, y_hat, _ = trainer.forward_backward(x, y)
    torch.testing.assert_close(y_hat, model(x).detach(), atol=1e-6, rtol=0)
    assert loss == pytest.approx(task.loss(model(x), y).item(), rel=1e-5)


def test_the_same_seed_repeats_a_run_exactly_even_with_dropout():
    runs = []
    for _ in range(2):
        model, task = small(num_layers=2, dropout=0.3, seed=4)
        trainer = engine.Trainer(model, task, engine.TrainConfig(seed=4, batch_size=8))
        torch.rand(100)  # something else in the process draws random numbers in between
        trainer.step(3)
        torch.rand(7)
        trainer.step(3)
        runs.append([s.loss for s in trainer.history])
    assert runs[0] == runs[1]
    model, task = small(num_layers=2, dropout=0.3, seed=4)
    other = engine.Trainer(model, task, engine.TrainConfig(seed=5, batch_size=8))
    assert [s.loss for s in other.step(6)] != runs[0]


def test_divergence_stops_cleanly_and_keeps_the_last_finite_weights():
    """A ReLU RNN with identity recurrence, lr 10 and no clipping explodes."""
    model, task = small(arch="rnn", activation="relu", init="identity")
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=10.0))
    snapshots = []
    for _ in range(50):
        snapshots.append({n: p.detach().clone() for n, p in model.named_parameters()})
        trainer.step(1)
        if trainer.diverged_at:
            break
    n = trainer.diverged_at
    assert n is not None and trainer.status == f"diverged at step {n}"
    assert trainer.history[-1].diverged and not any(s.diverged for s in trainer.history[:-1])
    for name, p in model.named_parameters():
        assert torch.isfinite(p).all()
        assert torch.equal(p, snapshots[-1][name])  # the diverging step was not applied
    assert trainer.step(5) == []  # stays stopped: a new Trainer starts again


def test_an_update_that_overflows_a_weight_is_undone():
    """Finite loss and gradient, but the optimizer writes inf: the step is rolled back."""
    model, task = small(arch="gru")
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=0.1))
    trainer.step(2)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    overflow_updates(trainer, model)
    stats = trainer.step(1)[0]
    assert stats.diverged and math.isfinite(stats.loss) and math.isfinite(stats.grad_norm)
    assert trainer.status == "diverged at step 3"
    for n, p in model.named_parameters():
        assert torch.equal(p, before[n])


def test_a_seeded_dropout_run_repeats_while_another_session_builds_and_trains():
    """Another session builds unseeded models and trains with dropout all the while, and surely
    between every chunk of the seeded run (events force that interleaving). Deadlines and
    timeouts everywhere: a broken lock fails the test, it cannot hang the suite."""
    task = engine.make_task("adding", seq_len=20)
    cfg = engine.ModelConfig(hidden_size=16, num_layers=2, dropout=0.5)

    def run(between=lambda: None):
        model = engine.build_model(cfg, task, seed=2)
        between()
        trainer = engine.Trainer(model, task, engine.TrainConfig(seed=2, batch_size=8))
        losses = []
        for _ in range(5):
            losses += [s.loss for s in trainer.step(3)]
            between()
        return losses

    alone = run()
    stop, went = threading.Event(), threading.Event()
    deadline = time.monotonic() + 120

    def noise():  # another session: unseeded models, dropout, its own seed
        while not stop.is_set() and time.monotonic() < deadline:
            model = engine.build_model(cfg, task)
            engine.Trainer(model, task, engine.TrainConfig(seed=9, batch_size=8)).step(2)
            went.set()

    def another_round():
        """Wait until the other session has built and trained again since this was called."""
        went.clear()
        assert went.wait(timeout=60), "the other session stopped drawing"

    thread = threading.Thread(target=noise, daemon=True)
    thread.start()
    try:
        together = run(between=another_round)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert together == alone


def test_a_trainer_refuses_a_model_built_for_another_task_and_bad_step_counts():
    model, _ = small()
    other = engine.make_task("parity", seq_len=20)
    with pytest.raises(ValueError, match="built for a adding task"):
        engine.Trainer(model, other, engine.TrainConfig())
    trainer = engine.Trainer(model, engine.make_task("adding", seq_len=20), engine.TrainConfig())
    with pytest.raises(ValueError, match="n must be a whole number"):
        trainer.step(1.5)
    with pytest.raises(ValueError, match="engine.make_task"):
        engine.build_model(engine.ModelConfig(), "adding")


def test_freezing_a_layer_keeps_its_weights_while_others_learn():
    task = engine.make_task("charlm", seq_len=16)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, num_layers=2), task)
    assert list(model.param_groups()) == ["embedding", "layer 0", "layer 1", "head"]
    trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=4))
    trainer.freeze("embedding", "layer 0")
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer.step(3)
    for n, p in model.named_parameters():
        moved = not torch.equal(p, before[n])
        assert moved == (n.startswith("head") or n.endswith("_l1"))
    trainer.unfreeze("layer 0")
    trainer.step(1)
    assert not torch.equal(model.rnn.weight_hh_l0, before["rnn.weight_hh_l0"])
    with pytest.raises(ValueError, match="no part named"):
        trainer.freeze("layer 7")


def test_initialisations_do_what_they_say():
    task = engine.make_task("adding", seq_len=5)
    H = 12
    ortho = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=H, init="orthogonal"), task)
    for block in ortho.rnn.weight_hh_l0.detach().split(H):
        torch.testing.assert_close(block @ block.T, torch.eye(H), atol=1e-5, rtol=0)
    irnn = engine.build_model(engine.ModelConfig(arch="rnn", activation="relu", hidden_size=H, init="identity"), task)
    assert torch.equal(irnn.rnn.weight_hh_l0, torch.eye(H)) and not irnn.rnn.bias_hh_l0.any()
    scaled = engine.build_model(
        engine.ModelConfig(arch="rnn", hidden_size=H, num_layers=2, init="scaled", spectral_radius=1.7), task
    )
    for name in ("weight_hh_l0", "weight_hh_l1"):
        radius = torch.linalg.eigvals(getattr(scaled.rnn, name).detach()).abs().max().item()
        assert radius == pytest.approx(1.7, rel=1e-5)
    fb = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=H, forget_bias=1.0), task)
    f_bias = (fb.rnn.bias_ih_l0 + fb.rnn.bias_hh_l0)[H : 2 * H]
    assert torch.equal(f_bias, torch.ones(H))


def test_vec2seq_and_token_models_have_the_task_shapes():
    gen = engine.make_task("sine", mode="generate", seq_len=25)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8), gen)
    x, y = gen.batch(3)
    assert model(x).shape == y.shape == (3, 25, 1)
    rec = engine.record(model, x, y)
    assert rec.hidden.shape == (1, 1, 25, 8)
    senti = engine.make_task("sentiment", seq_len=12)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=8, bidirectional=True), senti)
    x, y = senti.batch(4)
    assert model(x).shape == (4, 2)
    assert not math.isnan(engine.Trainer(model, senti, engine.TrainConfig()).step(2)[-1].loss)


def test_retune_trains_on_from_the_same_weights_with_the_new_settings():
    model, task = small()
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=8))
    trainer.step(3)
    adam_state = trainer.optimizer.state[model.head.weight]["exp_avg"].clone()
    trainer.retune(engine.TrainConfig(optimizer="adam", lr=5e-2, batch_size=8, clip_norm=0.01))
    assert trainer.optimizer.param_groups[0]["lr"] == 5e-2
    assert torch.equal(trainer.optimizer.state[model.head.weight]["exp_avg"], adam_state)  # moments kept
    stats = trainer.step(2)
    assert [s.step for s in stats] == [4, 5] and stats[-1].grad_norm_clipped <= 0.01 * (1 + 1e-5)
    trainer.retune(engine.TrainConfig(optimizer="sgd", lr=0.1, batch_size=8))
    assert isinstance(trainer.optimizer, torch.optim.SGD) and not trainer.optimizer.state
    with pytest.raises(ValueError, match="bidirectional"):
        bi, task = small(bidirectional=True)
        engine.Trainer(bi, task, engine.TrainConfig()).retune(engine.TrainConfig(bptt_window=5))


def test_resume_trains_on_after_finite_weights_are_put_back_and_refuses_otherwise():
    task = engine.make_task("adding", seq_len=50)
    model = engine.build_model(engine.ModelConfig(arch="rnn", activation="relu", hidden_size=64, init="identity"),
                               task, seed=0)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="sgd", lr=0.01, batch_size=64))
    trainer.step(2)
    assert trainer.diverged_at == 2 and trainer.step(1) == []  # stopped
    with torch.no_grad():
        model.head.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match="head.bias is not finite"):
        trainer.resume()
    model.load_state_dict(before)
    trainer.resume()
    assert trainer.diverged_at is None and len(trainer.step(1)) == 1
