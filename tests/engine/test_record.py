"""engine.record against references: PyTorch's own cells under autograd, chained per-step
Jacobians, closed forms for the linear RNN, and finite differences."""
import pytest
import torch

import engine
from engine.losses import compute_loss
from engine.recurrent import replay_stack

from .cases import CASES, case_id, double_model

FUSED = [c for c in CASES if engine.ModelConfig(**c).uses_fused_kernel]
LOOP_ONLY = [c for c in CASES if not engine.ModelConfig(**c).uses_fused_kernel]


def torch_cell(model, layer, direction):
    """nn.RNNCell / nn.LSTMCell / nn.GRUCell holding one direction of one layer's weights."""
    cfg, rnn = model.cfg, model.rnn
    s = f"_l{layer}" + ("_reverse" if direction else "")
    w_ih = getattr(rnn, "weight_ih" + s)
    kinds = {"lstm": torch.nn.LSTMCell, "gru": torch.nn.GRUCell}
    if cfg.arch == "rnn":
        cell = torch.nn.RNNCell(w_ih.shape[1], cfg.hidden_size, nonlinearity=cfg.activation)
    else:
        cell = kinds[cfg.arch](w_ih.shape[1], cfg.hidden_size)
    cell = cell.double()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(rnn, name + s))
    return cell


def reference_grad_h(model, x, y):
    """dL/dh_t for every layer, direction and t, by retain_grad on an unrolled graph of torch cells."""
    cfg = model.cfg
    layer_in = model.inputs(x)[0].detach()  # [T, D]
    T = layer_in.shape[0]
    kept = []
    for layer in range(cfg.num_layers):
        outs = []
        for d in range(cfg.num_directions):
            cell = torch_cell(model, layer, d)
            h = torch.zeros(1, cfg.hidden_size, dtype=torch.float64)
            c = torch.zeros_like(h)
            hs = [None] * T
            for t in (reversed(range(T)) if d else range(T)):
                if cfg.arch == "lstm":
                    h, c = cell(layer_in[t : t + 1], (h, c))
                else:
                    h = cell(layer_in[t : t + 1], h)
                h.retain_grad()
                hs[t] = h
            kept.append(hs)
            outs.append(torch.cat(hs))  # [T, H]
        layer_in = torch.cat(outs, dim=1)  # [T, dirs*H]
    y_hat = model.readout(layer_in[None])
    compute_loss(model.spec.loss, y_hat, y).backward()
    grads = torch.stack([torch.cat([h.grad for h in hs]) for hs in kept])  # [L*dirs, T, H]
    return grads.reshape(cfg.num_layers, cfg.num_directions, T, cfg.hidden_size)


@pytest.mark.parametrize("case", FUSED, ids=case_id)
def test_grad_h_equals_autograd_on_unrolled_torch_cells(case):
    task = engine.make_task("adding", seq_len=20)
    model = double_model(case, task)
    x, y = task.batch(3)
    x, y = x.double(), y.double()
    rec = engine.record(model, x, y, index=2, jacobians=False)
    expected = reference_grad_h(model, x[2:3], y[2:3])
    torch.testing.assert_close(rec.grad_h, expected, atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(rec.grad_norm_h, expected.norm(dim=-1), atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("case", LOOP_ONLY, ids=case_id)
def test_grad_h_equals_finite_differences(case):
    """Nudge h_t by eps in one unit and measure the loss: the derivative the recording reports."""
    task = engine.make_task("adding", seq_len=12)
    model = double_model(case, task, hidden=4)
    x, y = task.batch(1)
    x, y = x.double(), y.double()
    rec = engine.record(model, x, y, jacobians=False)
    L, D = rec.num_layers, rec.num_directions

    def loss_with(taps):
        with torch.no_grad():
            _, out = replay_stack(model.cfg, model.rnn, model.inputs(x), taps)
            return compute_loss("mse", model.readout(out), y).item()

    eps = 1e-5
    for layer, d, t, unit in [(0, 0, 0, 1), (0, D - 1, 5, 2), (L - 1, 0, 11, 3), (L - 1, D - 1, 3, 0)]:
        taps = torch.zeros(L, D, 12, 1, 4, dtype=torch.float64)
        taps[layer, d, t, 0, unit] = eps
        plus = loss_with(taps)
        taps[layer, d, t, 0, unit] = -eps
        minus = loss_with(taps)
        fd = (plus - minus) / (2 * eps)
        assert rec.grad_h[layer, d, t, unit].item() == pytest.approx(fd, rel=1e-5, abs=1e-9)


def step_function(model, layer, d, x_t):
    """state -> next state for one step of one layer with input x_t; state is h, or [h; c]."""
    from engine.cells import ACTIVATION_FNS, gru_step, lstm_step, rnn_step
    from engine.recurrent import layer_weights

    cfg = model.cfg
    w = layer_weights(model.rnn, layer, d)
    a_x = (x_t @ w.w_ih.T + w.b_ih)[None]  # [1, G*H]
    H = cfg.hidden_size

    def step(state):
        if cfg.arch == "lstm":
            h, c, _ = lstm_step(a_x, state[None, :H], state[None, H:], w)
            return torch.cat([h[0], c[0]])
        if cfg.arch == "gru":
            return gru_step(a_x, state[None], w)[0][0]
        return rnn_step(a_x, state[None], w, ACTIVATION_FNS[cfg.activation])[0]

    return step


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_jacobian_norm_equals_product_of_per_step_jacobians(case):
    task = engine.make_task("adding", seq_len=10)
    model = double_model(case, task, hidden=4)
    x, y = task.batch(1)
    rec = engine.record(model, x.double(), y.double())
    H, T = 4, 10
    layer_in = x[0].double()  # [T, D]
    for layer in range(rec.num_layers):
        for d in range(rec.num_directions):
            order = list(reversed(range(T))) if d else list(range(T))
            states = rec.hidden[layer, d]
            if rec.cell is not None:
                states = torch.cat([states, rec.cell[layer, d]], dim=1)  # [T, 2H]
            product = torch.eye(states.shape[1], dtype=torch.float64)  # d state_T / d state_T
            for k in range(T - 1, -1, -1):  # walk back from the direction's last step
                t = order[k]
                assert rec.jacobian_norm[layer, d, t].item() == pytest.approx(
                    torch.linalg.matrix_norm(product[:H, :H], ord=2).item(), rel=1e-8, abs=1e-14
                )
                if k > 0:
                    step = step_function(model, layer, d, layer_in[order[k]])
                    J = torch.autograd.functional.jacobian(step, states[order[k - 1]])
                    product = product @ J
        layer_in = torch.cat([rec.hidden[layer, dd] for dd in range(rec.num_directions)], dim=1)


def test_linear_rnn_jacobian_is_the_matrix_power():
    """h_T = W_hh^(T-t) h_t + (terms without h_t), so ||dh_T/dh_t||_2 = ||W_hh^(T-t)||_2."""
    task = engine.make_task("adding", seq_len=30)
    model = double_model(dict(arch="rnn", activation="linear"), task, hidden=8)
    x, y = task.batch(1)
    rec = engine.record(model, x.double(), y.double())
    W = model.rnn.weight_hh_l0.detach()
    for t in range(30):
        expected = torch.linalg.matrix_norm(torch.linalg.matrix_power(W, 29 - t), ord=2)
        assert rec.jacobian_norm[0, 0, t].item() == pytest.approx(expected.item(), rel=1e-9)


def test_recording_holds_the_model_prediction_and_parameter_gradients():
    torch.manual_seed(1)
    task = engine.make_task("parity", seq_len=12)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=8, num_layers=2), task)
    x, y = task.batch(5)
    rec = engine.record(model, x, y, index=3)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(rec.y_hat, model(x)[3], atol=1e-6, rtol=0)
    loss = task.loss(model(x[3:4]), y[3:4])
    assert rec.loss == pytest.approx(loss.item(), rel=1e-5)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    for (name, _), g in zip(model.named_parameters(), grads):
        assert rec.param_grad_norm[name] == pytest.approx(g.norm().item(), rel=1e-4, abs=1e-9)


def test_spectra_are_those_of_each_gate_block_of_w_hh():
    task = engine.make_task("adding", seq_len=5)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=6, bidirectional=True), task)
    rec = engine.record(model, *task.batch(1), spectra=True)
    assert rec.blocks == ("i", "f", "g", "o")
    W_f_reverse = model.rnn.weight_hh_l0_reverse.detach()[6:12]  # forget-gate block, PyTorch order
    expected = torch.linalg.eigvals(W_f_reverse)
    got = rec.eigenvalues[0, 1, 1]
    assert sorted(got.abs().tolist()) == pytest.approx(sorted(expected.abs().tolist()), rel=1e-5)
    torch.testing.assert_close(rec.singular_values[0, 1, 1], torch.linalg.svdvals(W_f_reverse))


def test_to_frame_is_the_recording_in_long_form():
    task = engine.make_task("adding", seq_len=7)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=3, num_layers=2, bidirectional=True), task)
    rec = engine.record(model, *task.batch(2), spectra=True)
    hidden = rec.to_frame("hidden")
    assert len(hidden) == 2 * 2 * 7 * 3
    row = hidden[(hidden.layer == 1) & (hidden.direction == "backward") & (hidden.t == 4) & (hidden.unit == 2)]
    assert row.value.item() == pytest.approx(rec.hidden[1, 1, 4, 2].item())
    gates = rec.to_frame("gates")
    f = gates[(gates.gate == "f") & (gates.layer == 0) & (gates.direction == "forward") & (gates.t == 6)
              & (gates.unit == 0)]
    assert f.value.item() == pytest.approx(rec.gates["f"][0, 0, 6, 0].item())
    norms = rec.to_frame("grad_norm_h")
    assert norms[(norms.layer == 0) & (norms.t == 0) & (norms.direction == "forward")].value.item() == pytest.approx(
        rec.grad_norm_h[0, 0, 0].item()
    )
    eig = rec.to_frame("eigenvalues")
    assert len(eig) == 2 * 2 * 4 * 3
    assert (eig.modulus - (eig.real**2 + eig.imag**2) ** 0.5).abs().max() < 1e-5
    assert set(rec.to_frame("param_grad_norm").parameter) == {n for n, _ in model.named_parameters()}
    with pytest.raises(ValueError, match="unknown key"):
        rec.to_frame("nonsense")


def test_rnn_recording_has_no_cell_or_gates_and_says_so():
    task = engine.make_task("adding", seq_len=5)
    model = engine.build_model(engine.ModelConfig(arch="rnn", hidden_size=3), task)
    rec = engine.record(model, *task.batch(1), spectra=True)
    assert rec.cell is None and rec.gates == {} and rec.blocks == ("hh",)
    with pytest.raises(ValueError, match="only an LSTM has a cell state"):
        rec.to_frame("cell")


def test_recording_leaves_the_model_exactly_as_it_was():
    task = engine.make_task("charlm", seq_len=20)
    model = engine.build_model(
        engine.ModelConfig(arch="lstm", hidden_size=8, num_layers=2, dropout=0.5), task
    )
    model.train()
    model.head.weight.requires_grad_(False)
    x, y = task.batch(2)
    task.loss(model(x), y).backward()
    weights = {n: p.detach().clone() for n, p in model.named_parameters()}
    grads = {n: (p.grad.clone() if p.grad is not None else None) for n, p in model.named_parameters()}
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    engine.record(model, x, y)
    with pytest.raises(ValueError):
        engine.record(model, x, y, index=7)
    assert model.training
    for n, p in model.named_parameters():
        assert torch.equal(p, weights[n])
        assert p.requires_grad == flags[n]
        assert (p.grad is None and grads[n] is None) or torch.equal(p.grad, grads[n])


def test_recording_works_inside_no_grad_and_restores_every_module_mode():
    task = engine.make_task("adding", seq_len=6)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), task, seed=0)
    model.train()
    model.rnn.eval()  # a mixed state: only the head trains
    x, y = task.batch(2)
    with torch.no_grad():
        rec = engine.record(model, x, y)
    with torch.inference_mode():
        engine.record(model, x, y)
    assert rec.grad_norm_h.min() > 0
    assert model.training and model.head.training and not model.rnn.training


def test_a_recording_that_fails_midway_still_restores_the_model(monkeypatch):
    task = engine.make_task("adding", seq_len=6)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=4, num_layers=2, dropout=0.3), task)
    model.train()
    model.rnn.weight_hh_l0.requires_grad_(False)
    seen = {}

    def failing_replay(*args, **kwargs):
        seen["training"] = model.training
        seen["frozen"] = model.rnn.weight_hh_l0.requires_grad
        raise RuntimeError("replay failed")

    monkeypatch.setattr(model, "replay", failing_replay)
    with pytest.raises(RuntimeError, match="replay failed"):
        engine.record(model, *task.batch(1))
    assert seen == {"training": False, "frozen": True}  # the replay ran opened up...
    assert model.training and not model.rnn.weight_hh_l0.requires_grad  # ...and it was closed again


def test_jacobians_computed_in_short_segments_equal_one_segment_over_all_steps(monkeypatch):
    import importlib

    recorder = importlib.import_module("engine.record")  # the module; engine.record is the function

    task = engine.make_task("adding", seq_len=9)
    model = double_model(dict(arch="lstm", num_layers=2, bidirectional=True), task, hidden=6)
    x, y = task.batch(1)
    whole = engine.record(model, x.double(), y.double()).jacobian_norm
    monkeypatch.setattr(recorder, "GRAPH_BUDGET", 9 * 6 * 4 * 2)  # segments of a few steps each
    chunked = engine.record(model, x.double(), y.double()).jacobian_norm
    torch.testing.assert_close(chunked, whole, atol=1e-13, rtol=0)
    monkeypatch.setattr(recorder, "MAX_JACOBIAN_ENTRIES", 9 * 6 * 6 - 1)
    with pytest.raises(ValueError, match="jacobians=False"):
        engine.record(model, x.double(), y.double())


# ---------------------------------------------------------------- truncated BPTT

TRUNCATED = [dict(arch=a, num_layers=2, **extra) for a, extra in
             [("rnn", {}), ("lstm", {}), ("gru", {}), ("lstm", dict(peephole=True))]]
TRUNCATED_TASKS = [("adding", {}), ("charlm", dict(embedding_dim=5))]  # seq2vec, and aligned (seq2seq)


def one_double_sample(task_name, case, seq_len=13):
    task = engine.make_task(task_name, seq_len=seq_len)
    extra = dict(TRUNCATED_TASKS)[task_name]
    model = double_model({**case, **extra}, task, hidden=5)
    x, y = task.batch(1)
    return task, model, (x.double() if x.is_floating_point() else x), (y.double() if y.is_floating_point() else y)


def reference_truncated_grad_h(model, x, y, window):
    """dL/dh_t by retain_grad on torch cells whose state is detached every `window` steps, the loss
    being what truncated BPTT trains on: a seq2vec task's loss at the end; an aligned task's loss on
    each chunk weighted by the chunk's share of the sequence."""
    cfg = model.cfg
    layer_in = model.inputs(x)[0].detach()  # [T, D]
    T = layer_in.shape[0]
    kept = []
    for layer in range(cfg.num_layers):
        cell = torch_cell(model, layer, 0)
        h = torch.zeros(1, cfg.hidden_size, dtype=torch.float64)
        c = torch.zeros_like(h)
        hs = []
        for t in range(T):
            if t % window == 0:  # the cut
                h, c = h.detach(), c.detach()
            if cfg.arch == "lstm":
                h, c = cell(layer_in[t : t + 1], (h, c))
            else:
                h = cell(layer_in[t : t + 1], h)
            h.retain_grad()
            hs.append(h)
        kept.append(hs)
        layer_in = torch.cat(hs)  # [T, H]
    out = layer_in[None]  # [1, T, H]
    if model.spec.mapping == "seq2vec":
        loss = compute_loss(model.spec.loss, model.readout(out), y)
    else:
        loss = sum(compute_loss(model.spec.loss, model.readout(out[:, s : s + window]), y[:, s : s + window])
                   * len(range(s, min(s + window, T))) / T for s in range(0, T, window))
    loss.backward()
    return torch.stack([torch.cat([h.grad for h in hs]) for hs in kept])[:, None]  # [L, 1, T, H]


@pytest.mark.parametrize("task_name", [t for t, _ in TRUNCATED_TASKS])
@pytest.mark.parametrize("case", [c for c in TRUNCATED if engine.ModelConfig(**c).uses_fused_kernel], ids=case_id)
def test_truncated_grad_h_equals_autograd_on_torch_cells_cut_every_window(case, task_name):
    _, model, x, y = one_double_sample(task_name, case)
    rec = engine.record(model, x, y, bptt_window=4)
    torch.testing.assert_close(rec.grad_h, reference_truncated_grad_h(model, x, y, 4), atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("task_name", [t for t, _ in TRUNCATED_TASKS])
@pytest.mark.parametrize("case", TRUNCATED, ids=case_id)
def test_truncated_parameter_gradients_equal_the_trainers(case, task_name):
    """record(bptt_window=k) against Trainer.forward_backward with TrainConfig(bptt_window=k) on
    the same one-sample batch: the whole gradient of every parameter, and the norms recorded."""
    from engine.replay import Taps
    from engine.truncated import replay_truncated

    task, model, x, y = one_double_sample(task_name, case)
    model.train()  # as the Trainer trains (no dropout here, so the same function as eval)
    trained_loss, _, _ = engine.Trainer(model, task, engine.TrainConfig(bptt_window=4)).forward_backward(x, y)
    trained = {n: p.grad.clone() for n, p in model.named_parameters()}
    rec = engine.record(model, x, y, bptt_window=4)
    assert rec.loss == pytest.approx(trained_loss, rel=1e-12)
    _, loss = replay_truncated(model, x, y, Taps(), 4, task.loss)
    names, params = zip(*model.named_parameters())
    for name, g in zip(names, torch.autograd.grad(loss, params)):
        torch.testing.assert_close(g, trained[name], atol=1e-12, rtol=1e-9)
        assert rec.param_grad_norm[name] == pytest.approx(trained[name].norm().item(), rel=1e-9, abs=1e-15)
    full = engine.record(model, x, y)
    assert rec.param_grad_norm != pytest.approx(full.param_grad_norm, rel=1e-6)  # the cut changed them
    for n, p in model.named_parameters():  # recording left the Trainer's gradients as they were
        assert torch.equal(p.grad, trained[n])


def test_a_seq2vec_gradient_is_exactly_zero_before_the_last_window():
    task = engine.make_task("adding", seq_len=23)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=6, num_layers=2), task, seed=0)
    x, y = task.batch(3)
    full = engine.record(model, x, y, index=1)
    cut = engine.record(model, x, y, index=1, bptt_window=5)
    last = 20  # chunks [0,5) [5,10) [10,15) [15,20) [20,23)
    assert torch.all(cut.grad_h[:, :, :last] == 0)
    assert torch.all(cut.grad_norm_h[:, :, last:] > 0)
    # inside the last chunk nothing was cut: the gradient there is full BPTT's
    torch.testing.assert_close(cut.grad_h[:, :, last:], full.grad_h[:, :, last:], atol=1e-7, rtol=1e-5)
    # the forward pass is full BPTT's: the same states, prediction and loss
    torch.testing.assert_close(cut.hidden, full.hidden, atol=1e-6, rtol=0)
    torch.testing.assert_close(cut.gates["f"], full.gates["f"], atol=1e-6, rtol=0)
    torch.testing.assert_close(cut.y_hat, full.y_hat, atol=1e-6, rtol=0)
    assert cut.loss == pytest.approx(full.loss, rel=1e-5)
    torch.testing.assert_close(cut.jacobian_norm, full.jacobian_norm)


def test_a_window_of_T_or_more_is_full_bptt():
    task = engine.make_task("charlm", seq_len=9)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4, num_layers=2), task, seed=0)
    x, y = task.batch(2)
    full = engine.record(model, x, y, jacobians=False)
    for window in (9, 50):
        same = engine.record(model, x, y, jacobians=False, bptt_window=window)
        assert torch.equal(same.grad_h, full.grad_h) and same.param_grad_norm == full.param_grad_norm


@pytest.mark.parametrize("task_name, model_cfg, window, fragments", [
    ("adding", {}, -1, ["bptt_window", "between 0 and 10000", "got -1"]),
    ("adding", {}, 2.5, ["bptt_window", "whole number"]),
    ("adding", {}, True, ["bptt_window", "whole number"]),
    ("adding", dict(bidirectional=True), 3, ["bptt_window=0", "bidirectional=False"]),
    ("reverse", {}, 3, ["bptt_window=0", "encdec"]),
    ("sine", {}, 3, ["bptt_window=0", "vec2seq"]),
    ("charlm", dict(arch="transformer", hidden_size=8), 3, ["bptt_window=0", "transformer has none"]),
])
def test_record_refuses_a_window_it_cannot_replay_saying_what_to_change(task_name, model_cfg, window, fragments):
    task = engine.make_task(task_name, **(dict(mode="generate") if task_name == "sine" else {}))
    model = engine.build_model(engine.ModelConfig(**{"arch": "gru", "hidden_size": 4, **model_cfg}), task, seed=0)
    x, y = task.batch(1)
    with pytest.raises(ValueError) as err:
        engine.record(model, x, y, bptt_window=window)
    assert all(f in str(err.value) for f in fragments), str(err.value)
    engine.record(model, x, y, jacobians=False)  # full BPTT still records
