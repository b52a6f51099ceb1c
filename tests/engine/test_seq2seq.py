"""The encoder-decoder shape: context passing, teacher forcing, greedy decoding, and its
recording against autograd on PyTorch's own cells."""
import pytest
import torch

import engine
from engine.seq2seq import EOS, SOS

from .cases import case_id


def model_for(case, seq_len=6, hidden=5):
    task = engine.make_task("reverse", seq_len=seq_len, symbols=5)
    model = engine.build_model(engine.ModelConfig(hidden_size=hidden, embedding_dim=4, **case), task, seed=0)
    return task, model.double()


def test_reverse_task_targets_are_the_reversed_source_then_eos():
    task = engine.make_task("reverse", seq_len=5, symbols=7)
    x, y = task.batch(10)
    assert x.shape == (10, 5) and y.shape == (10, 6)
    assert torch.equal(y[:, :5] - 2, x.flip(1)) and torch.all(y[:, 5] == EOS)
    assert task.spec.mapping == "encdec" and task.spec.output_size == 9


CASES = [dict(arch="gru"), dict(arch="lstm", num_layers=2, bidirectional=True), dict(arch="rnn")]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_teacher_forcing_feeds_sos_then_the_true_previous_token(case):
    task, model = model_for(case)
    x, y = task.batch(3)
    tf_in = model.teacher_inputs(y)
    assert torch.all(tf_in[:, 0] == SOS) and torch.equal(tf_in[:, 1:], y[:, :-1])
    # The decoder starts from the encoder's final state: [L*dirs, B, H] side by side per layer.
    _, h_n = model.encoder(model.source_embedding(x))
    context = model.context(h_n)
    h = context[0] if isinstance(context, tuple) else context
    h_enc = h_n[0] if isinstance(h_n, tuple) else h_n
    dirs = model.cfg.num_directions
    assert h.shape == (model.cfg.num_layers, 3, 5 * dirs)
    torch.testing.assert_close(h[-1, :, :5], h_enc[-dirs])
    if dirs == 2:
        torch.testing.assert_close(h[-1, :, 5:], h_enc[-1])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_greedy_decoding_feeds_back_its_own_argmax(case):
    """Greedy logits equal teacher-forced logits when the teacher is the greedy output itself."""
    task, model = model_for(case)
    x, _ = task.batch(4)
    model.eval()
    with torch.no_grad():
        free = model(x)  # [B, T_out, V]
        forced = model(x, free.argmax(dim=-1))
    torch.testing.assert_close(free, forced, atol=1e-10, rtol=0)


def cell_loop(cell, arch, inputs, h, c, reverse=False):
    hs = [None] * len(inputs)
    for t in reversed(range(len(inputs))) if reverse else range(len(inputs)):
        if arch == "lstm":
            h, c = cell(inputs[t : t + 1], (h, c))
        else:
            h = cell(inputs[t : t + 1], h)
        h.retain_grad()
        hs[t] = h
    return hs, h, c


def torch_cell(rnn, arch, hidden, s):
    w_ih = getattr(rnn, "weight_ih" + s)
    kind = {"lstm": torch.nn.LSTMCell, "gru": torch.nn.GRUCell, "rnn": torch.nn.RNNCell}[arch]
    cell = kind(w_ih.shape[1], hidden).double()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, name).copy_(getattr(rnn, name + s))
    return cell


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_recorded_gradients_reach_the_encoder_through_the_context(case):
    task, model = model_for(case)
    x, y = task.batch(2)
    rec = engine.record(model, x, y, index=1, jacobians=False)
    assert list(rec.stacks) == ["encoder", "decoder"]
    cfg, arch = model.cfg, model.cfg.arch
    L, dirs, H = cfg.num_layers, cfg.num_directions, cfg.hidden_size
    # Reference: the same network unrolled with torch cells, retain_grad on every h_t.
    layer_in = model.source_embedding(x[1]).detach()  # [T, E]
    enc_hs, finals = [], []
    for layer in range(L):
        outs = []
        for d in range(dirs):
            cell = torch_cell(model.encoder, arch, H, f"_l{layer}" + ("_reverse" if d else ""))
            zero = torch.zeros(1, H, dtype=torch.float64)
            hs, h, c = cell_loop(cell, arch, layer_in, zero, zero.clone(), reverse=d == 1)
            enc_hs.append(hs)
            finals.append((h, c))
            outs.append(torch.cat(hs))
        layer_in = torch.cat(outs, dim=1)
    dec_in = model.target_embedding(model.teacher_inputs(y[1:2])[0]).detach()  # [T_out, E]
    dec_hs = []
    for layer in range(L):
        h0 = torch.cat([finals[layer * dirs + d][0] for d in range(dirs)], dim=1)
        c0 = torch.cat([finals[layer * dirs + d][1] for d in range(dirs)], dim=1) if arch == "lstm" else None
        cell = torch_cell(model.decoder, arch, H * dirs, f"_l{layer}")
        hs, _, _ = cell_loop(cell, arch, dec_in, h0, c0)
        dec_hs.append(hs)
        dec_in = torch.cat(hs)
    logits = model.head(dec_in)[None]
    task.loss(logits, y[1:2]).backward()
    expected_enc = torch.stack([torch.cat([h.grad for h in hs]) for hs in enc_hs]).reshape(L, dirs, 6, H)
    expected_dec = torch.stack([torch.cat([h.grad for h in hs]) for hs in dec_hs]).reshape(L, 1, 7, H * dirs)
    torch.testing.assert_close(rec.stacks["encoder"].grad_h, expected_enc, atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(rec.stacks["decoder"].grad_h, expected_dec, atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(rec.y_hat, logits[0].detach(), atol=1e-12, rtol=0)
    assert rec.hidden.shape == (L, dirs, 6, H)  # rec.hidden is the first stack's: the encoder's
    frame = rec.to_frame("hidden", stack="decoder")
    assert frame.t.max() == 6 and frame.unit.max() == H * dirs - 1


def test_decoder_jacobians_follow_the_trajectory_that_starts_from_the_context():
    """A GRU's per-step Jacobians depend on the states they are taken at, and those start from
    the encoder's context: the chained product of per-step Jacobians along the recorded decoder
    states must give the recorded norms."""
    from engine.cells import gru_step
    from engine.recurrent import layer_weights

    task, model = model_for(dict(arch="gru"), hidden=4)
    x, y = task.batch(1)
    rec = engine.record(model, x, y)
    states = rec.stacks["decoder"].hidden[0, 0]  # [T_out, H]
    w = layer_weights(model.decoder, 0, 0)
    dec_in = model.target_embedding(model.teacher_inputs(y))[0].detach()  # [T_out, E]
    product = torch.eye(4, dtype=torch.float64)
    for t in range(6, -1, -1):
        expected = torch.linalg.matrix_norm(product, ord=2).item()
        assert rec.stacks["decoder"].jacobian_norm[0, 0, t].item() == pytest.approx(expected, rel=1e-8)
        if t > 0:
            a_x = (dec_in[t] @ w.w_ih.T + w.b_ih)[None]
            def step(h, a_x=a_x):
                return gru_step(a_x, h[None], w)[0][0]

            product = product @ torch.autograd.functional.jacobian(step, states[t - 1])


def test_encoder_decoder_trains_saves_and_freezes_like_any_model(tmp_path):
    task = engine.make_task("reverse", seq_len=4, symbols=4)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=16), task, seed=1)
    trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=32))
    assert set(model.param_groups()) == {
        "source_embedding", "encoder layer 0", "target_embedding", "decoder layer 0", "head"
    }
    trainer.freeze("encoder layer 0")
    before = model.encoder.weight_hh_l0.detach().clone()
    first = trainer.evaluate()[0]
    trainer.step(40)
    assert torch.equal(model.encoder.weight_hh_l0, before)
    assert trainer.evaluate()[0] < first
    loaded = engine.load(engine.save(model, tmp_path / "rev.safetensors"))
    x, _ = task.batch(5)
    model.eval(), loaded.eval()
    saved, read = model.state_dict(), loaded.state_dict()
    assert saved.keys() == read.keys() and all(torch.equal(saved[k], read[k]) for k in saved)  # the same bytes
    with torch.no_grad():
        # Not bit for bit: the trained model's frozen encoder weights (requires_grad off; the loaded
        # model's are on) send the GRU down another kernel on the avx2 path, whose float32 sums round
        # differently (measured 4.8e-7 apart on logits up to 3.9, a few ulps; equal on avx512).
        torch.testing.assert_close(model(x), loaded(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="truncated BPTT"):
        engine.Trainer(model, task, engine.TrainConfig(bptt_window=2))


def padded_dates(case, seed=0):
    """A float64 encoder-decoder on dates (sources padded at the front) and a batch of them."""
    task = engine.make_task("dates")
    model = engine.build_model(engine.ModelConfig(hidden_size=5, embedding_dim=4, **case), task, seed=seed)
    x, y = task.batch(6, torch.Generator().manual_seed(seed))
    padded = task.spec.padded(x)
    assert padded.any() and not padded.all(1).any()
    return model.double().eval(), x, y, padded


def states(state):
    return state if isinstance(state, tuple) else (state,)


PADDED_CASES = [
    dict(arch="lstm"),
    dict(arch="gru", num_layers=2, bidirectional=True),
    dict(arch="rnn", bidirectional=True, reverse_source=True),  # reversed, the pads come last
    dict(arch="lstm", peephole=True, bidirectional=True),  # the written-out loop
]


@pytest.mark.parametrize("case", PADDED_CASES, ids=case_id)
def test_the_decoder_starts_from_the_encoders_state_after_the_last_real_character(case):
    """A padded date is encoded and decoded as its characters alone, in the fused (packed) pass
    and in the recording's replay."""
    model, x, y, padded = padded_dates(case)
    with torch.no_grad():
        context = model.start(x).state  # [L, B, H']
        logits = model(x, y)  # [B, T_out, V]
        for b in range(len(x)):
            alone = x[b : b + 1, ~padded[b]]  # [1, S_b]
            for mine, ref in zip(states(context), states(model.start(alone).state)):
                torch.testing.assert_close(mine[:, b], ref[:, 0], atol=1e-12, rtol=0)
            torch.testing.assert_close(logits[b], model(alone, y[b : b + 1])[0], atol=1e-12, rtol=0)
    rec = engine.record(model, x, y, index=2, jacobians=False)
    torch.testing.assert_close(rec.y_hat, logits[2], atol=1e-12, rtol=0)
