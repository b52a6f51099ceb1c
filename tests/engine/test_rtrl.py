"""RTRL (engine/rtrl.py) against autograd's BPTT on the engine's own models and tasks: the same
gradient, available online, and truncated BPTT's bias beside it."""
import pytest
import torch

import engine
from engine.rtrl import check_rtrl, rtrl_gradients, rtrl_online, truncated_gradients

# (task, mapping, loss): seq2vec and seq2seq, mse and cross-entropy.
TASKS = ["adding", "recall", "parity", "sine"]  # seq2vec mse, seq2vec ce, seq2seq ce, seq2seq mse
SIZES = [(2, 1), (7, 4), (30, 16)]  # (T, H)
FLOAT32_SCALE = 1e-5  # float32: |RTRL - autograd| <= this x the largest |dL/dθ| (measured <= 1.1e-6 at T 30, H 4-32)


def make_task(name: str, T: int):
    """The named task with sequences of T steps (recall's T is its lag plus the signal's step)."""
    return engine.make_task(name, lag=T - 1) if name == "recall" else engine.make_task(name, seq_len=T)


def setup(arch: str, name: str, T: int, H: int, dtype=torch.float64, seed: int = 0, **cfg):
    """(task, model, x, y) in this dtype: a fresh model of the engine and a batch of 3 from its task."""
    task = make_task(name, T)
    model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=H, **cfg), task, seed=seed).to(dtype)
    x, y = task.batch(3, torch.Generator().manual_seed(seed))
    return task, model, x.to(dtype), y.to(dtype) if y.is_floating_point() else y


def autograd(model, loss) -> dict[str, torch.Tensor]:
    named = dict(model.named_parameters())
    return dict(zip(named, torch.autograd.grad(loss, list(named.values()))))


def bptt(task, model, x, y) -> dict[str, torch.Tensor]:
    """The reference: autograd through the engine's forward pass (PyTorch's nn.RNN / nn.GRU) and the task's loss."""
    return autograd(model, task.loss(model(x), y))


def largest(grads: dict[str, torch.Tensor]) -> float:
    return max(g.abs().max().item() for g in grads.values())


@pytest.mark.parametrize("T, H", SIZES)
@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("arch", ["rnn", "gru"])
def test_rtrl_equals_bptt_in_float64(arch, name, T, H):
    task, model, x, y = setup(arch, name, T, H)
    expected = bptt(task, model, x, y)
    got = rtrl_gradients(model, x, y)
    assert list(got) == list(expected)  # every parameter, by the names of model.named_parameters()
    assert largest(expected) > 1e-3  # a gradient worth comparing
    for name_, g in expected.items():
        torch.testing.assert_close(got[name_], g, rtol=1e-10, atol=1e-12, msg=name_)


@pytest.mark.parametrize("activation", ["relu", "sigmoid", "linear"])
def test_rtrl_follows_every_rnn_activation(activation):
    task, model, x, y = setup("rnn", "sine", 12, 5, activation=activation)
    expected, got = bptt(task, model, x, y), rtrl_gradients(model, x, y)
    for name_, g in expected.items():
        torch.testing.assert_close(got[name_], g, rtol=1e-10, atol=1e-12, msg=name_)


@pytest.mark.parametrize("name", TASKS)
@pytest.mark.parametrize("arch", ["rnn", "gru"])
def test_rtrl_equals_bptt_in_float32(arch, name):
    task, model, x, y = setup(arch, name, 30, 16, dtype=torch.float32, seed=1)
    expected, got = bptt(task, model, x, y), rtrl_gradients(model, x, y)
    atol = FLOAT32_SCALE * largest(expected)
    for name_, g in expected.items():
        torch.testing.assert_close(got[name_], g, rtol=1e-4, atol=atol, msg=name_)


@pytest.mark.parametrize("arch", ["rnn", "gru"])
@pytest.mark.parametrize("name", ["parity", "sine"])
def test_online_gradient_at_step_t_is_the_gradient_of_the_loss_up_to_t(arch, name):
    task, model, x, y = setup(arch, name, 8, 4)
    T = x.shape[1]
    steps = list(rtrl_online(model, x, y))
    assert [s.t for s in steps] == list(range(T))
    for step in steps:
        y_hat = model(x)  # [B, T, out]
        seen = sum(task.loss(y_hat[:, s], y[:, s]) for s in range(step.t + 1)) / T  # Σ_{s≤t} ℓ_s
        assert step.loss == pytest.approx(seen.item(), rel=1e-12)
        for name_, g in autograd(model, seen).items():
            torch.testing.assert_close(step.grads[name_], g, rtol=1e-10, atol=1e-12, msg=f"t={step.t} {name_}")
    assert steps[-1].loss == pytest.approx(task.loss(model(x), y).item(), rel=1e-12)


def test_online_step_never_reads_the_future():
    """Step t's gradient and sensitivity are the same whatever the inputs after t are."""
    task, model, x, y = setup("gru", "sine", 10, 4)
    changed = x.clone()
    changed[:, 6:] = torch.randn_like(changed[:, 6:])
    for before, after in zip(rtrl_online(model, x, y), rtrl_online(model, changed, y)):
        same = before.t < 6
        assert torch.equal(before.sensitivity, after.sensitivity) == same
        assert all(torch.equal(before.grads[n], after.grads[n]) for n in before.grads) == same


def test_seq2vec_gradient_is_zero_until_the_target():
    task, model, x, y = setup("rnn", "adding", 6, 4)
    steps = list(rtrl_online(model, x, y))
    assert all(s.loss == 0 and all(not g.any() for g in s.grads.values()) for s in steps[:-1])
    assert steps[-1].loss == pytest.approx(task.loss(model(x), y).item(), rel=1e-12)


@pytest.mark.parametrize("arch", ["rnn", "gru"])
def test_sensitivity_is_the_jacobian_of_h_t_by_the_recurrent_parameters(arch):
    """S_t[b, i, :] = dh_t[b, i]/dθ, with θ = weight_ih, weight_hh, bias_ih, bias_hh flattened in that order."""
    _, model, x, y = setup(arch, "sine", 5, 3)
    params = [getattr(model.rnn, n) for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")]
    out, _ = model.rnn(x)  # [B, T, H]
    for step in rtrl_online(model, x, y):
        for b in range(x.shape[0]):
            for i in range(model.cfg.hidden_size):
                row = torch.autograd.grad(out[b, step.t, i], params, retain_graph=True)
                torch.testing.assert_close(step.sensitivity[b, i], torch.cat([r.flatten() for r in row]),
                                           rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["adding", "sine"])
@pytest.mark.parametrize("arch", ["rnn", "gru"])
def test_truncated_bptt_is_exact_only_when_its_window_covers_the_sequence(arch, name):
    task, model, x, y = setup(arch, name, 12, 6)
    exact = rtrl_gradients(model, x, y)
    for window in (12, 50):
        for name_, g in truncated_gradients(model, x, y, window).items():
            torch.testing.assert_close(g, exact[name_], rtol=1e-10, atol=1e-12, msg=f"window {window} {name_}")
    for window in (1, 3, 11):
        truncated = truncated_gradients(model, x, y, window)
        w_hh = "rnn.weight_hh_l0"
        gap = (truncated[w_hh] - exact[w_hh]).norm() / exact[w_hh].norm()
        assert gap > 1e-3, f"window {window}: truncated BPTT's W_hh gradient is off by only {gap:.1e}"
        # The forward pass is not truncated, so the head (which reads h_t only) gets the exact gradient.
        torch.testing.assert_close(truncated["head.weight"], exact["head.weight"], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["adding", "sine"])
def test_truncated_gradients_cut_the_state_at_every_window(name):
    """The reference written here: nn.RNN run chunk by chunk, its state detached between chunks."""
    task, model, x, y = setup("rnn", name, 10, 4)
    window, T, state, loss = 4, x.shape[1], None, 0.0
    for start in range(0, T, window):
        out, state = model.rnn(x[:, start:start + window], state)  # [B, k, H]
        state = state.detach()
        if task.spec.mapping == "seq2seq":
            loss = loss + task.loss(model.head(out), y[:, start:start + window]) * out.shape[1] / T
        elif start + window >= T:
            loss = loss + task.loss(model.head(out[:, -1]), y)
    for name_, g in autograd(model, loss).items():
        torch.testing.assert_close(truncated_gradients(model, x, y, window)[name_], g, rtol=1e-10, atol=1e-12)


def test_neither_changes_the_model_nor_its_grad():
    _, model, x, y = setup("gru", "sine", 6, 3)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    rtrl_gradients(model, x, y)
    truncated_gradients(model, x, y, 2)
    assert all(torch.equal(p, before[n]) and p.grad is None for n, p in model.named_parameters())


@pytest.mark.parametrize("cfg, task, words", [
    (dict(arch="lstm"), ("adding", {}), "arch='rnn' and arch='gru'"),
    (dict(arch="rnn", num_layers=2), ("adding", {}), "num_layers=1"),
    (dict(arch="gru", bidirectional=True), ("adding", {}), "bidirectional=False"),
    (dict(arch="rnn"), ("charlm", {}), "reads tokens"),
    (dict(arch="rnn"), ("sine", {"mode": "generate"}), "vec2seq"),
])
def test_refuses_what_it_cannot_follow_saying_what_to_change(cfg, task, words):
    task = engine.make_task(task[0], **task[1])
    model = engine.build_model(engine.ModelConfig(hidden_size=4, **cfg), task, seed=0)
    with pytest.raises(ValueError, match=words):
        check_rtrl(model)
    with pytest.raises(ValueError, match=words):
        rtrl_online(model, *task.batch(2))


def test_refuses_a_window_of_no_steps():
    _, model, x, y = setup("rnn", "adding", 5, 3)
    with pytest.raises(ValueError, match="window must be between 1"):
        truncated_gradients(model, x, y, 0)
