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
    from engine.cells import gru_step, lstm_step, rnn_step, ACTIVATION_FNS
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
    rec = engine.record(*(lambda b: (model, *b))(task.batch(1)))
    assert rec.blocks == ("i", "f", "g", "o")
    W_f_reverse = model.rnn.weight_hh_l0_reverse.detach()[6:12]  # forget-gate block, PyTorch order
    expected = torch.linalg.eigvals(W_f_reverse)
    got = rec.eigenvalues[0, 1, 1]
    assert sorted(got.abs().tolist()) == pytest.approx(sorted(expected.abs().tolist()), rel=1e-5)
    torch.testing.assert_close(rec.singular_values[0, 1, 1], torch.linalg.svdvals(W_f_reverse))


def test_to_frame_is_the_recording_in_long_form():
    task = engine.make_task("adding", seq_len=7)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=3, num_layers=2, bidirectional=True), task)
    rec = engine.record(model, *task.batch(2))
    hidden = rec.to_frame("hidden")
    assert len(hidden) == 2 * 2 * 7 * 3
    row = hidden[(hidden.layer == 1) & (hidden.direction == "backward") & (hidden.t == 4) & (hidden.unit == 2)]
    assert row.value.item() == pytest.approx(rec.hidden[1, 1, 4, 2].item())
    gates = rec.to_frame("gates")
    f = gates[(gates.gate == "f") & (gates.layer == 0) & (gates.direction == "forward") & (gates.t == 6) & (gates.unit == 0)]
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
    rec = engine.record(model, *task.batch(1))
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
    assert not model._forward_hooks and not model.rnn._forward_hooks


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


def test_jacobians_computed_in_row_chunks_equal_all_rows_at_once(monkeypatch):
    import importlib

    recorder = importlib.import_module("engine.record")  # the module; engine.record is the function

    task = engine.make_task("adding", seq_len=9)
    model = double_model(dict(arch="lstm", num_layers=2, bidirectional=True), task, hidden=6)
    x, y = task.batch(1)
    whole = engine.record(model, x.double(), y.double()).jacobian_norm
    monkeypatch.setattr(recorder, "GRAPH_BUDGET", 9 * 6 * 4 * 2)  # two rows of the identity at a time
    chunked = engine.record(model, x.double(), y.double()).jacobian_norm
    torch.testing.assert_close(chunked, whole, atol=1e-13, rtol=0)
    monkeypatch.setattr(recorder, "MAX_JACOBIAN_ENTRIES", 9 * 6 * 6 - 1)
    with pytest.raises(ValueError, match="jacobians=False"):
        engine.record(model, x.double(), y.double())
