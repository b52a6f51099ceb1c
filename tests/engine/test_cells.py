"""The written-out equations reproduce PyTorch's kernels, and recorded gates reproduce states."""
import pytest
import torch

import engine
from engine.recurrent import replay_stack

from .cases import CASES, case_id, double_model

FUSED = [c for c in CASES if engine.ModelConfig(**c).uses_fused_kernel]


@pytest.mark.parametrize("case", FUSED, ids=case_id)
def test_replay_reproduces_pytorch_kernel_in_float32(case):
    torch.manual_seed(0)
    task = engine.make_task("adding", seq_len=30)
    model = engine.build_model(engine.ModelConfig(hidden_size=16, **case), task).eval()
    x, _ = task.batch(4)
    with torch.no_grad():
        fused, _ = model.features(model.inputs(x))  # nn.LSTM / nn.GRU / nn.RNN
        _, replayed = replay_stack(model.cfg, model.rnn, model.inputs(x), None)
    assert fused.shape == replayed.shape
    torch.testing.assert_close(replayed, fused, atol=2e-6, rtol=0)


def textbook_lstm(x, w_ih, w_hh, b_ih, b_hh, w_ci, w_cf, w_co):
    """Gers & Schmidhuber (2000) peephole LSTM, one gate per line, from the paper's equations."""
    H = w_hh.shape[1]
    W_i, W_f, W_g, W_o = w_ih.split(H)
    U_i, U_f, U_g, U_o = w_hh.split(H)
    b_i, b_f, b_g, b_o = (b_ih + b_hh).split(H)
    h, c, hs = torch.zeros(H, dtype=x.dtype), torch.zeros(H, dtype=x.dtype), []
    for x_t in x:
        i = torch.sigmoid(W_i @ x_t + U_i @ h + w_ci * c + b_i)
        f = torch.sigmoid(W_f @ x_t + U_f @ h + w_cf * c + b_f)
        g = torch.tanh(W_g @ x_t + U_g @ h + b_g)
        c = f * c + i * g
        o = torch.sigmoid(W_o @ x_t + U_o @ h + w_co * c + b_o)
        h = o * torch.tanh(c)
        hs.append(h)
    return torch.stack(hs)


def test_peephole_lstm_matches_the_paper_and_reduces_to_nn_lstm():
    task = engine.make_task("adding", seq_len=25)
    model = double_model(dict(arch="lstm", peephole=True), task, hidden=5)
    x, _ = task.batch(1)
    x = x.double()
    rnn = model.rnn
    with torch.no_grad():
        out, _ = model.features(x)
        ref = textbook_lstm(
            x[0], rnn.weight_ih_l0, rnn.weight_hh_l0, rnn.bias_ih_l0, rnn.bias_hh_l0,
            rnn.weight_ci_l0, rnn.weight_cf_l0, rnn.weight_co_l0,
        )
        torch.testing.assert_close(out[0], ref, atol=1e-12, rtol=0)
        # With the peepholes at zero it is exactly PyTorch's LSTM on the same weights.
        for name in ("ci", "cf", "co"):
            getattr(rnn, f"weight_{name}_l0").zero_()
        lstm = torch.nn.LSTM(2, 5, batch_first=True).double()
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            getattr(lstm, name).copy_(getattr(rnn, name))
        torch.testing.assert_close(model.features(x)[0], lstm(x)[0], atol=1e-12, rtol=0)


@pytest.mark.parametrize("activation", ["sigmoid", "linear"])
def test_rnn_variants_pytorch_lacks_match_the_elman_equation(activation):
    task = engine.make_task("adding", seq_len=20)
    model = double_model(dict(arch="rnn", activation=activation), task, hidden=4)
    x = task.batch(1)[0].double()
    rnn = model.rnn
    act = torch.sigmoid if activation == "sigmoid" else (lambda a: a)
    h, hs = torch.zeros(4, dtype=torch.float64), []
    for x_t in x[0]:
        h = act(rnn.weight_ih_l0 @ x_t + rnn.bias_ih_l0 + rnn.weight_hh_l0 @ h + rnn.bias_hh_l0)
        hs.append(h)
    with torch.no_grad():
        torch.testing.assert_close(model.features(x)[0][0], torch.stack(hs), atol=1e-12, rtol=0)


def previous(states, direction):
    """h_{t-1} in the direction's own order: zeros before its first step. states: [T, H]."""
    zero = torch.zeros_like(states[:1])
    if direction == 0:
        return torch.cat([zero, states[:-1]])
    return torch.cat([states[1:], zero])


@pytest.mark.parametrize("case", [c for c in CASES if c["arch"] != "rnn"], ids=case_id)
def test_recorded_gates_reproduce_recorded_states(case):
    task = engine.make_task("adding", seq_len=15)
    model = double_model(case, task)
    x, y = task.batch(2)
    rec = engine.record(model, x.double(), y.double(), index=1)
    layer_in = x[1].double()  # [T, D]
    for layer in range(rec.num_layers):
        for d in range(rec.num_directions):
            s = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = getattr(model.rnn, "weight_ih" + s), getattr(model.rnn, "weight_hh" + s)
            b = getattr(model.rnn, "bias_ih" + s) + getattr(model.rnn, "bias_hh" + s)
            h = rec.hidden[layer, d]
            h_prev = previous(h, d)
            if case["arch"] == "lstm":
                i, f, g, o = (rec.gates[k][layer, d] for k in "ifgo")
                c = rec.cell[layer, d]
                torch.testing.assert_close(c, f * previous(c, d) + i * g, atol=1e-12, rtol=0)
                torch.testing.assert_close(h, o * torch.tanh(c), atol=1e-12, rtol=0)
                a_i, a_f, a_g, a_o = (layer_in @ w_ih.T + h_prev @ w_hh.T + b).detach().chunk(4, dim=1)
                if not case.get("peephole"):
                    torch.testing.assert_close(i, torch.sigmoid(a_i), atol=1e-12, rtol=0)
                    torch.testing.assert_close(f, torch.sigmoid(a_f), atol=1e-12, rtol=0)
                torch.testing.assert_close(g, torch.tanh(a_g), atol=1e-12, rtol=0)
            else:
                r, z, n = (rec.gates[k][layer, d] for k in "rzn")
                torch.testing.assert_close(h, (1 - z) * n + z * h_prev, atol=1e-12, rtol=0)
                H = h.shape[1]
                a_r = (layer_in @ w_ih[:H].T + h_prev @ w_hh[:H].T + b[:H]).detach()
                torch.testing.assert_close(r, torch.sigmoid(a_r), atol=1e-12, rtol=0)
        layer_in = torch.cat([rec.hidden[layer, d] for d in range(rec.num_directions)], dim=1)
