"""engine.record's Jacobian norms, taken segment by segment, against the whole-sequence replay they
replaced (kept here as the reference) and against torch.autograd.functional.jacobian."""
import importlib

import pytest
import torch

import engine
from engine.cells import GATE_COUNT, unroll_layer
from engine.padding import real_steps
from engine.recurrent import initial_state, layer_weights
from engine.replay import run_stack
from engine.spectra import spectral_norms

from .cases import CASES, case_id, double_model

recorder = importlib.import_module("engine.record")  # the module; engine.record is the function

T = 11


def reference_jacobian_norms(stack) -> torch.Tensor:
    """||dh_T/dh_t||_2 as engine.record computed it before segments: the whole sequence replayed as
    a batch of H copies, one backward of the identity from h_T giving every J_t at once: [L, dirs, T]."""
    cfg, x_in = stack.cfg, stack.x_in
    H, T = cfg.hidden_size, x_in.shape[1]
    norms = torch.zeros(cfg.num_layers, cfg.num_directions, T, dtype=x_in.dtype)  # [L, dirs, T]
    layer_in = x_in.detach()[0]  # [T, D]
    real = real_steps(stack.padded)  # [T, 1] or None
    for layer in range(cfg.num_layers):
        for direction in range(cfg.num_directions):
            h0, c0 = initial_state(cfg, stack.state, layer * cfg.num_directions + direction, x_in)  # [1, H]
            taps = torch.zeros(T, H, H, dtype=x_in.dtype, requires_grad=True)  # [T, H, H]
            trace = unroll_layer(
                cfg.arch,
                layer_weights(stack.rnn, layer, direction),
                layer_in[:, None, :].expand(-1, H, -1),  # [T, H, D]
                h0.detach().expand(H, -1),  # [H, H]
                c0.detach().expand(H, -1) if c0 is not None else None,
                activation=cfg.activation,
                reverse=direction == 1,
                taps=taps,
                keep_gates=False,
                real=real.expand(-1, H) if real is not None else None,  # [T, H]
            )
            eye = torch.eye(H, dtype=x_in.dtype)  # [H, H]: copy r backpropagates e_r
            (jac,) = torch.autograd.grad((trace.h_last * eye).sum(), taps)  # [T, H, H]
            norms[layer, direction] = spectral_norms(jac)
        layer_in = torch.cat([t.h[:, 0] for t in stack.traces[layer]], dim=1).detach()  # [T, dirs*H]
    return norms


def replayed(case: dict, hidden: int = 5, pads: bool = False, state: bool = False, dtype=torch.float64):
    """One sample's StackReplay: random inputs, optionally pads in the middle and a random initial state."""
    task = engine.make_task("adding", seq_len=T)
    model = double_model(case, task, hidden=hidden).to(dtype)
    cfg, gen = model.cfg, torch.Generator().manual_seed(3)
    D = layer_weights(model.rnn, 0, 0).w_ih.shape[1]
    x_in = torch.randn(1, T, D, generator=gen, dtype=dtype)  # [1, T, D]
    padded = (torch.arange(T) % 4 == 2)[None] if pads else None  # [1, T]
    h0 = torch.randn(cfg.num_layers * cfg.num_directions, 1, hidden, generator=gen, dtype=dtype)  # [L*dirs, 1, H]
    init = (h0, torch.randn(h0.shape, generator=gen, dtype=dtype)) if cfg.arch == "lstm" else h0
    with torch.no_grad():
        stack, _ = run_stack("rnn", cfg, model.rnn, x_in, None, init if state else None, padded=padded)
    return stack


def segment_steps(monkeypatch, steps: int, hidden: int, arch: str) -> None:
    """Make engine.record cut every direction into segments of `steps` steps."""
    monkeypatch.setattr(recorder, "GRAPH_BUDGET", steps * hidden * hidden * GATE_COUNT[arch])


@pytest.mark.parametrize("steps", [1, 4, T])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_segments_equal_the_whole_sequence_replay(case, steps, monkeypatch):
    """Every cell, stacked and bidirectional, with pads and an initial state; segments of one step,
    of a length that does not divide T, and one segment for the whole sequence."""
    stack = replayed(case, pads=True, state=True)
    segment_steps(monkeypatch, steps, 5, stack.cfg.arch)
    torch.testing.assert_close(recorder.jacobian_norms(stack), reference_jacobian_norms(stack), atol=1e-13, rtol=1e-10)


def test_float32_segments_equal_the_whole_sequence_replay(monkeypatch):
    """At float32 the segments start from the recording's own states (a batch of one) and their seeds are
    carried, so they round differently from the one long batched replay, no further than that."""
    stack = replayed(dict(arch="lstm", num_layers=2, bidirectional=True), hidden=16, dtype=torch.float32)
    segment_steps(monkeypatch, 3, 16, "lstm")
    torch.testing.assert_close(recorder.jacobian_norms(stack), reference_jacobian_norms(stack), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("case", [dict(arch="lstm", peephole=True), dict(arch="gru"), dict(arch="rnn")], ids=case_id)
@pytest.mark.parametrize("direction", [0, 1])
def test_norms_are_those_of_autograds_jacobian_of_h_T_by_h_t(case, direction, monkeypatch):
    """J_t from torch.autograd.functional.jacobian of the steps after t as a function of h_t (c_t held),
    with segments of two steps so that most J_t cross a segment boundary."""
    stack = replayed({**case, "num_layers": 1, "bidirectional": True}, pads=True, state=True)
    segment_steps(monkeypatch, 2, 5, stack.cfg.arch)
    norms = recorder.jacobian_norms(stack)[0, direction]  # [T]
    cfg, trace = stack.cfg, stack.traces[0][direction]
    w, real = layer_weights(stack.rnn, 0, direction), real_steps(stack.padded)  # real: [T, 1]
    for t in range(T):
        later = slice(0, t) if direction else slice(t + 1, T)  # the steps after t in the direction's order

        def h_T(h_t, t=t, later=later):
            c_t = trace.c[t].detach() if trace.c is not None else None  # [1, H]
            return unroll_layer(cfg.arch, w, stack.x_in[0, later, None], h_t[None], c_t, activation=cfg.activation,
                                reverse=direction == 1, keep_gates=False,
                                real=real[later] if real is not None else None).h_last[0]  # [H]

        last = t == (0 if direction else T - 1)  # the direction's last step: J_T = I
        J = torch.eye(5, dtype=torch.float64) if last else torch.autograd.functional.jacobian(h_T, trace.h[t, 0])
        assert norms[t].item() == pytest.approx(torch.linalg.matrix_norm(J, ord=2).item(), rel=1e-10)
