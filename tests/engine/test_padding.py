"""Padding is not data: both paths of a recurrent stack against PyTorch's own packed kernels."""
import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

import engine
from engine.losses import compute_loss
from engine.recurrent import final_state, replay_stack, run_recurrent
from engine.replay import Taps
from engine.truncated import replay_truncated

from .cases import case_id, double_model
from .test_record import FUSED, TRUNCATED, reference_grad_h, torch_cell

KERNEL_CASES = [
    {"arch": arch, **shape}
    for arch in ("lstm", "gru", "rnn")
    for shape in (dict(num_layers=1, bidirectional=False), dict(num_layers=2, bidirectional=True))
]
LENGTHS = [9, 1, 5, 3]  # mixed in one batch: a sample without pads, one with a single real step


def padded_batch(model, side: str, seed: int = 0):
    """x_in [B, T, D] with every sample's real steps at the front or the back, padded [B, T]."""
    gen = torch.Generator().manual_seed(seed)
    T, D = max(LENGTHS), model.rnn.input_size
    x_in = torch.randn(len(LENGTHS), T, D, generator=gen, dtype=torch.float64)  # [B, T, D]: pads hold noise too
    steps = torch.arange(T)[None]  # [1, T]
    lengths = torch.tensor(LENGTHS)[:, None]  # [B, 1]
    padded = steps >= lengths if side == "back" else steps < T - lengths  # [B, T]
    return x_in, padded


def packed_reference(rnn, x_in, padded, state=None):
    """PyTorch's kernel on a packed sequence of each sample's real steps: output [B, T_max, dirs*H]
    (real steps first) and its final state."""
    real = [x[~p] for x, p in zip(x_in, padded)]  # each [len, D]
    lengths = torch.tensor([len(r) for r in real])
    packed = pack_padded_sequence(pad_sequence(real, batch_first=True), lengths, batch_first=True,
                                  enforce_sorted=False)
    out, final = rnn(packed, state)
    return pad_packed_sequence(out, batch_first=True)[0], final


def states(state):
    return state if isinstance(state, tuple) else (state,)


def assert_matches_reference(out, final, ref_out, ref_final, padded):
    for b, p in enumerate(padded):
        real = ~p
        torch.testing.assert_close(out[b, real], ref_out[b, : int(real.sum())], atol=1e-12, rtol=0)
    for mine, ref in zip(states(final), states(ref_final)):
        torch.testing.assert_close(mine, ref, atol=1e-12, rtol=0)


@pytest.mark.parametrize("side", ["front", "back"])
@pytest.mark.parametrize("case", KERNEL_CASES, ids=case_id)
def test_both_paths_equal_pytorchs_packed_kernels(case, side):
    task = engine.make_task("adding", seq_len=9)
    model = double_model(case, task, hidden=5).eval()
    x_in, padded = padded_batch(model, side)
    with torch.no_grad():
        ref_out, ref_final = packed_reference(model.rnn, x_in, padded)
        fused_out, fused_final = run_recurrent(model.rnn, x_in, None, padded)
        traces, loop_out = replay_stack(model.cfg, model.rnn, x_in, None, padded=padded)
        outputs_only, _ = run_recurrent(model.rnn, x_in, None, padded, final=False)  # the forward pass's call
    assert_matches_reference(fused_out, fused_final, ref_out, ref_final, padded)
    torch.testing.assert_close(outputs_only, fused_out, atol=1e-12, rtol=0)
    assert_matches_reference(loop_out, final_state(model.cfg, traces), ref_out, ref_final, padded)
    # At a pad step both hold the state carried through it, so they agree at every step.
    torch.testing.assert_close(fused_out, loop_out, atol=1e-12, rtol=0)


@pytest.mark.parametrize("case", KERNEL_CASES, ids=case_id)
def test_a_pad_step_holds_the_state_carried_through_it(case):
    """Forward: the last real step's state before it, zeros before the first; backward: the next
    real step's, zeros after the last. The read-out of the last and first position reads them."""
    task = engine.make_task("adding", seq_len=9)
    model = double_model(case, task, hidden=5).eval()
    H = model.cfg.hidden_size
    for side in ("front", "back"):
        x_in, padded = padded_batch(model, side, seed=1)
        with torch.no_grad():
            out, final = run_recurrent(model.rnn, x_in, None, padded)
        h_n = states(final)[0]  # [L*dirs, B, H]
        top = (model.cfg.num_layers - 1) * model.cfg.num_directions
        for b, p in enumerate(padded):
            real = (~p).nonzero()[:, 0]
            first, last = int(real[0]), int(real[-1])
            torch.testing.assert_close(out[b, -1, :H], h_n[top, b])
            assert torch.all(out[b, :first, :H] == 0)
            assert torch.equal(out[b, last:, :H], out[b, last, :H].expand(len(p) - last, -1))
            if model.cfg.bidirectional:
                torch.testing.assert_close(out[b, 0, H:], h_n[top + 1, b])
                assert torch.all(out[b, last + 1 :, H:] == 0)
                assert torch.equal(out[b, : first + 1, H:], out[b, first, H:].expand(first + 1, -1))


@pytest.mark.parametrize("case", KERNEL_CASES, ids=case_id)
def test_a_sample_without_a_real_step_keeps_its_initial_state(case):
    """A truncated chunk can be all pads for a short review padded at the front."""
    task = engine.make_task("adding", seq_len=9)
    model = double_model(case, task, hidden=5).eval()
    x_in, padded = padded_batch(model, "front")
    padded[1] = True
    gen = torch.Generator().manual_seed(2)
    shape = (model.cfg.num_layers * model.cfg.num_directions, len(LENGTHS), 5)
    h0 = torch.randn(shape, generator=gen, dtype=torch.float64)  # [L*dirs, B, H]
    state = (h0, h0.flip(-1)) if case["arch"] == "lstm" else h0
    with torch.no_grad():
        fused_out, fused_final = run_recurrent(model.rnn, x_in, state, padded)
        traces, loop_out = replay_stack(model.cfg, model.rnn, x_in, None, state, padded=padded)
        outputs_only, _ = run_recurrent(model.rnn, x_in, state, padded, final=False)
    for final in (fused_final, final_state(model.cfg, traces)):
        for mine, start in zip(states(final), states(state)):
            torch.testing.assert_close(mine[:, 1], start[:, 1], atol=0, rtol=0)
    torch.testing.assert_close(fused_out, loop_out, atol=1e-12, rtol=0)
    torch.testing.assert_close(outputs_only, loop_out, atol=1e-12, rtol=0)


@pytest.mark.parametrize("case", KERNEL_CASES[:2], ids=case_id)
def test_a_batch_without_pads_takes_the_plain_call(case):
    task = engine.make_task("adding", seq_len=9)
    model = double_model(case, task, hidden=5).eval()
    x_in, padded = padded_batch(model, "back")
    with torch.no_grad():
        plain, _ = model.rnn(x_in)
        assert torch.equal(run_recurrent(model.rnn, x_in, None, torch.zeros_like(padded))[0], plain)
        assert torch.equal(run_recurrent(model.rnn, x_in, None, None)[0], plain)


SEQ2VEC_CASES = [
    *KERNEL_CASES,
    dict(arch="lstm", peephole=True, num_layers=2, bidirectional=True),  # the loop trains it
    dict(arch="rnn", activation="sigmoid", num_layers=1, bidirectional=True),
]


@pytest.mark.parametrize("case", SEQ2VEC_CASES, ids=case_id)
def test_a_review_padded_to_seq_len_is_read_as_its_words_alone(case):
    """Sentiment pads at the front: the prediction for a padded review is the prediction for its
    words alone, in a batch of reviews of every length."""
    task = engine.make_task("sentiment", seq_len=20)
    model = double_model(case, task, hidden=5)
    x, _ = task.batch(8, torch.Generator().manual_seed(0))
    padded = task.spec.padded(x)
    assert padded.any() and padded[:, -1].logical_not().all()  # pads in front, last step real
    with torch.no_grad():
        y_hat = model(x)  # [B, 2]
        for b in range(len(x)):
            torch.testing.assert_close(y_hat[b], model(x[b : b + 1, ~padded[b]])[0], atol=1e-12, rtol=0)


# ---------------------------------------------------------------- engine.record of a padded sample

def padded_review(case):
    """A float64 sentiment model, a batch of reviews padded at the front, and the shortest's index."""
    task = engine.make_task("sentiment", seq_len=16)
    model = double_model({**case, "embedding_dim": 4}, task, hidden=5)
    x, y = task.batch(6, torch.Generator().manual_seed(0))
    padded = task.spec.padded(x)
    return model, x, y, padded, int(padded.sum(1).argmax())


@pytest.mark.parametrize("case", FUSED, ids=case_id)
def test_padded_grad_h_equals_autograd_on_the_packed_model(case):
    """Packing runs each sample on its real steps alone: the recording's dL/dh_t at those steps is
    autograd's on torch cells unrolled over them, and its prediction and loss the model's own
    forward pass on the padded batch (packed, or compacted for one direction)."""
    model, x, y, padded, index = padded_review(case)
    real = ~padded[index]  # [T]
    assert not real.all()
    rec = engine.record(model, x, y, index=index)
    expected = reference_grad_h(model, x[index : index + 1, real], y[index : index + 1])  # [L, dirs, len, H]
    torch.testing.assert_close(rec.grad_h[:, :, real], expected, atol=1e-12, rtol=1e-9)
    model.eval()
    y_hat = model(x)  # PyTorch's kernel, on the whole padded batch
    torch.testing.assert_close(rec.y_hat, y_hat[index].detach(), atol=1e-12, rtol=0)
    assert rec.loss == pytest.approx(compute_loss("ce", y_hat[index : index + 1], y[index : index + 1]).item(),
                                     rel=1e-12)


def reference_padded_truncated_grad_h(model, x, y, window):
    """dL/dh_t by retain_grad on torch cells cut every `window` steps that carry (h, c) through
    every pad step unchanged, as packing does; a pad step's h is a copy, to hold its own gradient."""
    cfg = model.cfg
    layer_in = model.inputs(x)[0].detach()  # [T, D]
    real = ~model.spec.padded(x)[0]  # [T]
    kept = []
    for layer in range(cfg.num_layers):
        cell = torch_cell(model, layer, 0)
        h = torch.zeros(1, cfg.hidden_size, dtype=torch.float64)
        c = torch.zeros_like(h)
        hs = []
        for t in range(len(real)):
            if t % window == 0:  # the cut (h a leaf that may hold a gradient, for a window of pads)
                h, c = h.detach().requires_grad_(), c.detach()
            if not real[t]:
                h = h.clone()
            elif cfg.arch == "lstm":
                h, c = cell(layer_in[t : t + 1], (h, c))
            else:
                h = cell(layer_in[t : t + 1], h)
            h.retain_grad()
            hs.append(h)
        kept.append(hs)
        layer_in = torch.cat(hs)  # [T, H]
    compute_loss(model.spec.loss, model.readout(layer_in[None]), y).backward()
    return torch.stack([torch.cat([h.grad for h in hs]) for hs in kept])[:, None]  # [L, 1, T, H]


@pytest.mark.parametrize("case", [c for c in TRUNCATED if engine.ModelConfig(**c).uses_fused_kernel], ids=case_id)
def test_truncated_grad_h_of_a_padded_review_carries_through_the_pads(case):
    model, x, y, padded, index = padded_review(case)
    assert padded[index, :4].all()  # a whole first window of pads
    rec = engine.record(model, x, y, index=index, bptt_window=4)
    expected = reference_padded_truncated_grad_h(model, x[index : index + 1], y[index : index + 1], 4)
    torch.testing.assert_close(rec.grad_h, expected, atol=1e-12, rtol=1e-9)


@pytest.mark.parametrize("reverse_source", [False, True])
def test_a_recording_marks_the_pad_steps_of_each_stack_in_its_reading_order(reverse_source):
    model, x, y, padded, index = padded_review(dict(arch="gru"))
    rec = engine.record(model, x, y, index=index, jacobians=False)
    assert torch.equal(rec.pad_mask, padded[index]) and rec.pad_mask.any()
    adding = engine.make_task("adding")
    unpadded = engine.build_model(engine.ModelConfig(hidden_size=4), adding, seed=0)
    assert engine.record(unpadded, *adding.batch(1)).pad_mask is None
    dates = engine.make_task("dates")
    encdec = engine.build_model(engine.ModelConfig(hidden_size=4, reverse_source=reverse_source), dates, seed=0)
    x, y = dates.batch(2, torch.Generator().manual_seed(0))
    rec = engine.record(encdec, x, y, index=0, jacobians=False)
    source_pads = dates.spec.padded(x[0])
    assert torch.equal(rec.stacks["encoder"].pad_mask, source_pads.flip(0) if reverse_source else source_pads)
    assert rec.stacks["decoder"].pad_mask is None


@pytest.mark.parametrize("case", TRUNCATED, ids=case_id)
def test_truncated_gradients_of_padded_reviews_equal_the_trainers(case):
    """The Trainer's truncated BPTT carries the state through pads as the replay does."""
    model, x, y, _, _ = padded_review(case)
    task = engine.make_task("sentiment", seq_len=16)
    trained_loss, _, _ = engine.Trainer(model, task, engine.TrainConfig(bptt_window=4)).forward_backward(x, y)
    trained = {n: p.grad.clone() for n, p in model.named_parameters()}
    _, loss = replay_truncated(model, x, y, Taps(), 4, task.loss)
    assert loss.item() == pytest.approx(trained_loss, rel=1e-12)
    names, params = zip(*model.named_parameters(), strict=True)
    for name, g in zip(names, torch.autograd.grad(loss, params), strict=True):
        torch.testing.assert_close(g, trained[name], atol=1e-12, rtol=1e-9)
