"""An nn.LSTM or nn.RNN recorded through its kernel (engine/fused_replay.py) against the written-out
replay it replaces (engine.record(..., written_out=True)), which test_record.py holds to PyTorch's
cells under autograd and to finite differences."""
import pytest
import torch

import engine
import engine.replay

from .cases import case_id, double_model

SHAPES = [dict(num_layers=layers, bidirectional=bi) for layers in (1, 2) for bi in (False, True)]
LSTMS = [dict(arch="lstm", **shape) for shape in SHAPES]
KERNELS = LSTMS + [dict(arch="rnn", activation=act, **shape) for act in ("tanh", "relu") for shape in SHAPES]
FIELDS = ("hidden", "cell", "grad_h", "jacobian_norm")


@pytest.fixture
def fused_calls(monkeypatch):
    """How many stacks the fused path replayed, so no comparison passes by taking the written-out one twice."""
    calls = []
    real = engine.replay.fused_stack

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine.replay, "fused_stack", counted)
    return calls


def assert_same_recording(fused, written, atol, rtol):
    torch.testing.assert_close(fused.y_hat, written.y_hat, atol=atol, rtol=rtol)
    assert fused.loss == pytest.approx(written.loss, rel=rtol, abs=atol)
    assert fused.param_grad_norm.keys() == written.param_grad_norm.keys()
    for name, norm in written.param_grad_norm.items():
        assert fused.param_grad_norm[name] == pytest.approx(norm, rel=rtol, abs=atol), name
    assert fused.stacks.keys() == written.stacks.keys()
    for name, stack in written.stacks.items():
        got = fused.stacks[name]
        for field in FIELDS:
            if getattr(stack, field) is not None:
                torch.testing.assert_close(getattr(got, field), getattr(stack, field), atol=atol, rtol=rtol,
                                           msg=lambda m, f=field, n=name: f"{n} {f}: {m}")
        assert got.gates.keys() == stack.gates.keys() == ({"i", "f", "g", "o"} if fused.arch == "lstm" else set())
        for gate, values in stack.gates.items():
            torch.testing.assert_close(got.gates[gate], values, atol=atol, rtol=rtol)
    for site, trace in written.attention_traces.items():
        torch.testing.assert_close(fused.attention_traces[site].weights, trace.weights, atol=atol, rtol=rtol)


@pytest.mark.parametrize("case", KERNELS, ids=case_id)
@pytest.mark.parametrize("task_name", ["adding", "parity"])  # the head on the last step, on every step
def test_a_fused_recording_equals_the_written_out_replay_in_float64(case, task_name, fused_calls):
    task = engine.make_task(task_name, seq_len=9)
    model = double_model(case, task, hidden=5)
    x, y = task.batch(4, torch.Generator().manual_seed(1))
    x = x.double() if x.is_floating_point() else x
    y = y.double() if y.is_floating_point() else y
    fused = engine.record(model, x, y, index=2, spectra=True)
    assert fused_calls == [model.cfg]
    written = engine.record(model, x, y, index=2, spectra=True, written_out=True)
    assert len(fused_calls) == 1
    assert_same_recording(fused, written, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("case", KERNELS, ids=case_id)
def test_a_fused_recording_in_float32_is_within_rounding_of_the_written_out_one(case, fused_calls):
    task = engine.make_task("adding", seq_len=200)
    model = engine.build_model(engine.ModelConfig(hidden_size=32, **case), task, seed=3)
    x, y = task.batch(2, torch.Generator().manual_seed(1))
    fused = engine.record(model, x, y, index=1, jacobians=False)
    written = engine.record(model, x, y, index=1, jacobians=False, written_out=True)
    assert len(fused_calls) == 1
    assert_same_recording(fused, written, atol=1e-6, rtol=1e-4)
    assert fused.grad_norm_h.max() > 1e-3  # gradients that reach back, not zeros agreeing


# Bahdanau's (additive) decoder reads the context of the step before, so it is replayed a step at a
# time through the written-out equations; only its encoder is one fused call.
@pytest.mark.parametrize("case, stacks_fused", [(dict(arch="lstm", num_layers=2), 2),
                                                (dict(arch="lstm", attention="general", num_layers=2), 2),
                                                (dict(arch="lstm", attention="additive", bidirectional=True), 1)],
                         ids=["plain", "luong", "bahdanau"])
def test_encoder_decoders_are_recorded_fused_with_the_decoder_started_from_the_encoder(case, stacks_fused,
                                                                                       fused_calls):
    task = engine.make_task("reverse", seq_len=6, symbols=5)
    model = engine.build_model(engine.ModelConfig(hidden_size=5, embedding_dim=4, **case), task, seed=0).double()
    x, y = task.batch(3, torch.Generator().manual_seed(2))
    fused = engine.record(model, x, y, index=1)
    assert len(fused_calls) == stacks_fused
    written = engine.record(model, x, y, index=1, written_out=True)
    assert_same_recording(fused, written, atol=1e-12, rtol=1e-10)
    assert fused.stacks["encoder"].grad_norm_h.min() > 0  # the decoder's loss reached every encoder step


def test_truncated_bptt_is_recorded_fused_chunk_by_chunk(fused_calls):
    task = engine.make_task("adding", seq_len=12)
    model = double_model(dict(arch="lstm", num_layers=2), task, hidden=5)
    x, y = task.batch(2, torch.Generator().manual_seed(1))
    x, y = x.double(), y.double()
    fused = engine.record(model, x, y, bptt_window=4)
    assert len(fused_calls) == 3  # one per chunk
    written = engine.record(model, x, y, bptt_window=4, written_out=True)
    assert_same_recording(fused, written, atol=1e-12, rtol=1e-10)
    assert (fused.grad_h[:, :, :8] == 0).all()  # seq2vec: only the last chunk's steps get a gradient


def test_a_padded_sample_takes_the_written_out_replay_and_a_whole_one_the_kernel(fused_calls):
    task = engine.make_task("sentiment", seq_len=16)
    model = engine.build_model(engine.ModelConfig(arch="lstm", hidden_size=5, embedding_dim=4), task, seed=0).double()
    x, y = task.batch(32, torch.Generator().manual_seed(0))
    padded = task.spec.padded(x)
    with_pads, whole = int(padded.any(1).nonzero()[0]), int((~padded.any(1)).nonzero()[0])
    engine.record(model, x, y, index=with_pads)
    assert fused_calls == []  # packed, as training runs it: the fused kernel does not apply
    engine.record(model, x, y, index=whole)
    assert len(fused_calls) == 1


@pytest.mark.parametrize("nudged", [(0, 1, 3, 0, 2), (1, 0, 2, 0, 1)], ids=["layer 0 backward", "layer 1 forward"])
def test_nonzero_taps_move_the_fused_replay_as_they_move_the_written_out_one(nudged):
    """A tap is added to h_t on the output and, through the zero block, to the next step's
    recurrence: moving one moves everything after it as moving h_t itself does."""
    task = engine.make_task("adding", seq_len=7)
    model = double_model(dict(arch="lstm", num_layers=2, bidirectional=True), task, hidden=4)
    x, y = task.batch(1, torch.Generator().manual_seed(1))
    x, y = x.double(), y.double()
    layer, direction = nudged[:2]

    def replayed(taps):
        with torch.no_grad():
            replay = model.replay(x, y, taps)
        trace = replay.stacks["rnn"].traces[layer][direction]
        return replay.y_hat, trace.h, trace.c, replay.stacks["rnn"].traces[1][1 - direction].h

    still = replayed(engine.replay.Taps())
    fused, written = (replayed(NudgedTaps(written_out, nudged, 0.1)) for written_out in (False, True))
    assert not torch.equal(fused[0], still[0]) and not torch.equal(fused[2], still[2])  # the nudge moved them
    for got, expected in zip(fused, written):
        torch.testing.assert_close(got, expected, atol=1e-12, rtol=1e-10)


class NudgedTaps(engine.replay.Taps):
    """Taps that are not zero at one entry [layer, direction, t, sample, unit]."""

    def __init__(self, written_out, index, eps):
        super().__init__(written_out)
        self.index, self.eps = index, eps

    def make(self, name, cfg, x_in):
        taps = super().make(name, cfg, x_in).detach()
        taps[self.index] = self.eps
        return taps


NO_KERNEL = [dict(arch="gru"), dict(arch="lstm", peephole=True), dict(arch="rnn", activation="linear"),
             dict(arch="lstm", layer_norm=True)]


@pytest.mark.parametrize("case", NO_KERNEL, ids=case_id)
def test_cells_without_a_kernel_to_record_from_take_the_written_out_replay(case, fused_calls):
    task = engine.make_task("adding", seq_len=6)
    model = engine.build_model(engine.ModelConfig(hidden_size=4, **case), task, seed=0)
    engine.record(model, *task.batch(2, torch.Generator().manual_seed(1)), jacobians=False)
    assert fused_calls == []
