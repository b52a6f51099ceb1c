"""Layer normalisation (Ba, Kiros & Hinton 2016) and zoneout (Krueger et al. 2017) in the written-out
cells: gradients against finite differences, the normalised pre-activations and the zoned-out units
of a recorded or seeded step, recordings against autograd on a textbook cell, reproducible training
on the private dropout stream, checkpoints, describe() and the config's validation."""
import re

import pytest
import torch
import torch.nn.functional as F

import engine
from engine.cells import (
    ACTIVATION_FNS,
    LN_EPS,
    gru_step,
    input_side,
    lstm_step,
    normalise,
    rnn_step,
    unroll_layer,
    zoneout_masks,
)
from engine.checkpoint import from_bytes, to_bytes
from engine.losses import compute_loss
from engine.recurrent import layer_weights

ARCHS = ("rnn", "gru", "lstm")
D, H, T = 2, 4, 5  # D: the adding problem reads (value, mark)


def model_of(arch: str, hidden: int = H, seed: int = 0, **fields):
    """A float64 model on the adding problem, its layer-norm gains and biases moved off 1 and 0 (as
    training would) so that a gain or bias read in the wrong place shows."""
    task = engine.make_task("adding", seq_len=8)
    model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=hidden, **fields), task, seed=seed).double()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".gain_" in name or ".bias_c" in name:
                p.add_(0.3 * torch.randn(p.shape, generator=generator, dtype=p.dtype))  # [G*H] or [H]
    return model, task


def one_layer(arch: str, **fields):
    """The weights (as LayerWeights) of a one-layer float64 model: gradcheck's inputs."""
    model, _ = model_of(arch, **fields)
    return layer_weights(model.rnn, 0, 0)


def leaves(w) -> list[torch.Tensor]:
    """Every tensor of one layer's weights, as leaves gradcheck differentiates against."""
    norms = [w.norms.gain_ih, w.norms.gain_hh, w.norms.gain_c, w.norms.bias_c] if w.norms else []
    return [t.detach().clone().requires_grad_() for t in [w.w_ih, w.w_hh, w.b_ih, w.b_hh, *norms] if t is not None]


def rebuilt(w, tensors):
    """The LayerWeights w with its tensors replaced by gradcheck's."""
    from engine.cells import LayerNorms, LayerWeights

    w_ih, w_hh, b_ih, b_hh, *norms = tensors
    return LayerWeights(w_ih, w_hh, b_ih, b_hh, norms=LayerNorms(*norms) if norms else None, zoneout=w.zoneout)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_layer_normalised_step_has_finite_difference_gradients(arch):
    w = one_layer(arch, layer_norm=True)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(1, 2, D, generator=gen, dtype=torch.float64, requires_grad=True)  # [1, B, D]
    h = torch.randn(2, H, generator=gen, dtype=torch.float64, requires_grad=True)  # [B, H]
    c = torch.randn(2, H, generator=gen, dtype=torch.float64, requires_grad=True)  # [B, H]

    def step(x, h, c, *tensors):
        v = rebuilt(w, tensors)
        a_x = input_side(x, v)[0]  # [B, G*H]
        if arch == "lstm":
            return lstm_step(a_x, h, c, v)[:2]
        if arch == "gru":
            return gru_step(a_x, h, v)[0]
        return rnn_step(a_x, h, v, torch.tanh)

    assert torch.autograd.gradcheck(step, (x, h, c, *leaves(w)))


@pytest.mark.parametrize("fields", [dict(layer_norm=True), dict(zoneout=0.3), dict(layer_norm=True, zoneout=0.3)],
                         ids=["layer_norm", "zoneout", "both"])
@pytest.mark.parametrize("arch", ARCHS)
def test_a_short_sequence_has_finite_difference_gradients_at_evaluation(arch, fields):
    """Zoneout at evaluation is its expectation, p h_{t-1} + (1 - p) h~_t: smooth, and checked here."""
    w = one_layer(arch, **fields)
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(T, 2, D, generator=gen, dtype=torch.float64, requires_grad=True)  # [T, B, D]
    h0 = torch.randn(2, H, generator=gen, dtype=torch.float64, requires_grad=True)  # [B, H]
    c0 = torch.randn(2, H, generator=gen, dtype=torch.float64, requires_grad=True) if arch == "lstm" else None

    def run(x, h0, c0, *tensors):
        trace = unroll_layer(arch, rebuilt(w, tensors), x, h0, c0)
        return (trace.h, trace.c) if arch == "lstm" else trace.h  # [T, B, H] each

    assert torch.autograd.gradcheck(run, (x, h0, c0, *leaves(w)))


def textbook_ln(a: torch.Tensor, gain: torch.Tensor, bias: torch.Tensor, blocks: int) -> torch.Tensor:
    """Ba et al.'s LN(a; gain, bias) over each gate block's H units, written with mean and variance."""
    split = a.reshape(*a.shape[:-1], blocks, -1)  # [..., G, H]
    mu = split.mean(-1, keepdim=True)  # [..., G, 1]
    var = ((split - mu) ** 2).mean(-1, keepdim=True)  # [..., G, 1]
    return gain * ((split - mu) / torch.sqrt(var + LN_EPS)).reshape(a.shape) + bias  # [..., G*H]


@pytest.mark.parametrize("arch", ARCHS)
def test_recorded_step_is_gain_times_preactivations_of_mean_0_variance_1_plus_bias(arch):
    """At a recorded step t, W_ih x_t and W_hh h_{t-1} (h_{t-1} as recorded) normalised per gate
    block have mean 0 and variance 1 per sample (sigma^2 / (sigma^2 + eps), exactly), and the
    recorded gates (the RNN's h_t) are the cell's nonlinearities of gain * normalised + bias."""
    model, task = model_of(arch, layer_norm=True)
    x, y = task.batch(1)
    x, y = x.double(), y.double()
    rec = engine.record(model, x, y, jacobians=False)
    w = layer_weights(model.rnn, 0, 0)
    G = w.w_hh.shape[0] // H
    t = 4
    x_t = model.inputs(x)[0, t].detach()  # [D]
    h_prev = rec.hidden[0, 0, t - 1]  # [H]
    for a in (x_t @ w.w_ih.T, h_prev @ w.w_hh.T):  # [G*H] each
        n = normalise(a.detach(), G).reshape(G, H)  # [G, H]
        raw = a.detach().reshape(G, H).var(-1, unbiased=False)  # [G]: sigma^2 of each block
        torch.testing.assert_close(n.mean(-1), torch.zeros(G, dtype=n.dtype), atol=1e-12, rtol=0)
        # 1 but for eps: sigma^2 / (sigma^2 + eps), 0.996 for W_ih x_t's sigma^2 of 0.003 at a step of no mark
        torch.testing.assert_close(n.var(-1, unbiased=False), raw / (raw + LN_EPS), atol=1e-12, rtol=1e-9)
        assert (n.var(-1, unbiased=False) > 0.99).all()
    with torch.no_grad():
        pre = (textbook_ln(x_t @ w.w_ih.T, w.norms.gain_ih, w.b_ih, G)
               + textbook_ln(h_prev @ w.w_hh.T, w.norms.gain_hh, w.b_hh, G))  # [G*H]
    blocks = pre.split(H)  # G x [H]
    if arch == "rnn":
        torch.testing.assert_close(rec.hidden[0, 0, t], torch.tanh(blocks[0]))
    elif arch == "gru":  # r and z see the sum; n is read from its own two sides
        torch.testing.assert_close(rec.gates["r"][0, 0, t], torch.sigmoid(blocks[0]))
        torch.testing.assert_close(rec.gates["z"][0, 0, t], torch.sigmoid(blocks[1]))
    else:
        for name in "ifo":
            torch.testing.assert_close(rec.gates[name][0, 0, t], torch.sigmoid(blocks["ifgo".index(name)]))
        torch.testing.assert_close(rec.gates["g"][0, 0, t], torch.tanh(blocks[2]))
        c_t = rec.cell[0, 0, t]  # [H]
        shown = textbook_ln(c_t, w.norms.gain_c, w.norms.bias_c, 1)  # LN(c_t)
        torch.testing.assert_close(rec.hidden[0, 0, t], rec.gates["o"][0, 0, t] * torch.tanh(shown))


@pytest.mark.parametrize("arch", ARCHS)
def test_zoneout_in_training_keeps_exactly_the_masked_units(arch):
    """With the generator seeded, the masks are the draws zoneout_masks makes (h's, then c's): where
    m is 1 a unit is exactly its previous value, elsewhere exactly the cell's new value."""
    p = 0.4
    w = one_layer(arch, zoneout=p, layer_norm=True)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(T, 3, D, generator=gen, dtype=torch.float64)  # [T, B, D]
    h0 = torch.randn(3, H, generator=gen, dtype=torch.float64)  # [B, H]
    c0 = torch.randn(3, H, generator=gen, dtype=torch.float64) if arch == "lstm" else None
    torch.manual_seed(7)
    with torch.no_grad():
        trace = unroll_layer(arch, w, x, h0, c0, training=True)
    torch.manual_seed(7)
    m_h = zoneout_masks((T, 3, H), p, h0)  # [T, B, H]
    m_c = zoneout_masks((T, 3, H), p, h0) if arch == "lstm" else None  # [T, B, H]
    assert 0 < m_h.sum() < m_h.numel()
    a_x = input_side(x, w)  # [T, B, G*H]
    h, c = h0, c0
    with torch.no_grad():
        for t in range(T):
            if arch == "lstm":
                h_new, c_new, _ = lstm_step(a_x[t], h, c, w)
                assert torch.equal(trace.c[t], torch.where(m_c[t], c, c_new))
            elif arch == "gru":
                h_new, _ = gru_step(a_x[t], h, w)
            else:
                h_new = rnn_step(a_x[t], h, w, ACTIVATION_FNS["tanh"])
            assert torch.equal(trace.h[t], torch.where(m_h[t], h, h_new))
            h, c = trace.h[t], trace.c[t] if arch == "lstm" else None


def test_zoneout_at_evaluation_is_the_expectation_and_draws_nothing():
    p = 0.25
    w = one_layer("lstm", zoneout=p)
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(T, 2, D, generator=gen, dtype=torch.float64)  # [T, B, D]
    h0 = torch.zeros(2, H, dtype=torch.float64)  # [B, H]
    before = torch.get_rng_state()
    trace = unroll_layer("lstm", w, x, h0, h0)
    assert torch.equal(torch.get_rng_state(), before)
    h_new, c_new, _ = lstm_step(input_side(x, w)[0], h0, h0, w)
    torch.testing.assert_close(trace.h[0], (1 - p) * h_new)
    torch.testing.assert_close(trace.c[0], (1 - p) * c_new)


def losses_of(arch: str, seed: int, steps: int = 4) -> list[float]:
    task = engine.make_task("adding", seq_len=10)
    model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=8, zoneout=0.5), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(seed=seed, batch_size=8))
    return [s.loss for s in trainer.step(steps)]


@pytest.mark.parametrize("arch", ["gru", "lstm"])
def test_zoneout_masks_come_from_the_trainers_private_stream(arch):
    """The same seed repeats the losses exactly, whatever torch's global generator did in between;
    the global generator is not advanced by training; another seed gives other losses."""
    torch.manual_seed(0)
    before = torch.get_rng_state()
    first = losses_of(arch, seed=5)
    assert torch.equal(torch.get_rng_state(), before)
    torch.rand(1000)  # another session draws from the global generator
    assert losses_of(arch, seed=5) == first
    assert losses_of(arch, seed=6) != first


def test_the_masks_depend_on_the_dropout_stream_alone():
    """Two Trainers on the same model and batches, whose dropout streams differ, train differently:
    the masks are drawn (the same batches and weights with zoneout=0 would train alike)."""
    task = engine.make_task("adding", seq_len=10)
    cfg = engine.ModelConfig(arch="gru", hidden_size=8, zoneout=0.5)
    runs = []
    for dropout_seed in (1, 2, 1):
        model = engine.build_model(cfg, task, seed=0)
        trainer = engine.Trainer(model, task, engine.TrainConfig(seed=0, batch_size=8))
        trainer.dropout_rng = engine.rng.PrivateRNG(dropout_seed)
        runs.append([s.loss for s in trainer.step(3)])
    assert runs[0] == runs[2] and runs[0] != runs[1]


def textbook_grads(model, x, y):
    """y_hat, dL/dh_t [L, dirs, T, H] and dL/dθ of a float64 model, by retain_grad on a per-step
    graph written from the papers' equations: LN by mean and variance, zoneout's expectation."""
    cfg = model.cfg
    p = cfg.zoneout
    layer_in = model.inputs(x)[0].detach()  # [T, D]
    steps = layer_in.shape[0]
    kept = []
    for layer in range(cfg.num_layers):
        outs = []
        for d in range(cfg.num_directions):
            w = layer_weights(model.rnn, layer, d)
            G = w.w_hh.shape[0] // cfg.hidden_size
            ln = w.norms is not None
            h = torch.zeros(cfg.hidden_size, dtype=torch.float64)  # [H]
            c = torch.zeros_like(h)  # [H]
            hs = [None] * steps
            for t in (reversed(range(steps)) if d else range(steps)):
                a_x, a_h = w.w_ih @ layer_in[t], w.w_hh @ h  # [G*H] each
                if ln:
                    a_x = textbook_ln(a_x, w.norms.gain_ih, w.b_ih, G)  # [G*H]
                    a_h = textbook_ln(a_h, w.norms.gain_hh, w.b_hh, G)  # [G*H]
                else:
                    a_x, a_h = a_x + w.b_ih, a_h + w.b_hh
                if cfg.arch == "lstm":
                    i, f, g, o = (a_x + a_h).split(cfg.hidden_size)
                    c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                    shown = textbook_ln(c_new, w.norms.gain_c, w.norms.bias_c, 1) if ln else c_new
                    h_new = torch.sigmoid(o) * torch.tanh(shown)
                    c = p * c + (1 - p) * c_new
                elif cfg.arch == "gru":
                    x_r, x_z, x_n = a_x.split(cfg.hidden_size)
                    h_r, h_z, h_n = a_h.split(cfg.hidden_size)
                    r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
                    h_new = (1 - z) * torch.tanh(x_n + r * h_n) + z * h
                else:
                    h_new = torch.tanh(a_x + a_h)
                h = p * h + (1 - p) * h_new
                h.retain_grad()
                hs[t] = h
            kept.append(hs)
            outs.append(torch.stack(hs))  # [T, H]
        layer_in = torch.cat(outs, dim=1)  # [T, dirs*H]
    y_hat = model.readout(layer_in[None])
    model.zero_grad()
    compute_loss(model.spec.loss, y_hat, y).backward()
    grads = torch.stack([torch.stack([h.grad for h in hs]) for hs in kept])  # [L*dirs, T, H]
    shape = (cfg.num_layers, cfg.num_directions, steps, cfg.hidden_size)
    return y_hat.detach()[0], grads.reshape(shape), {n: q.grad.norm().item() for n, q in model.named_parameters()}


@pytest.mark.parametrize("fields", [dict(layer_norm=True), dict(zoneout=0.3),
                                    dict(layer_norm=True, zoneout=0.3, num_layers=2, bidirectional=True)],
                         ids=["layer_norm", "zoneout", "both-stacked-bidirectional"])
@pytest.mark.parametrize("arch", ARCHS)
def test_recorded_gradients_equal_autograd_on_textbook_cells(arch, fields):
    model, task = model_of(arch, **fields)
    model.train()  # record() must replay at evaluation whatever mode the model is in
    x, y = task.batch(2)
    x, y = x.double(), y.double()
    rec = engine.record(model, x, y, index=1, jacobians=True)
    y_hat, grad_h, grad_params = textbook_grads(model, x[1:2], y[1:2])
    torch.testing.assert_close(rec.y_hat, y_hat, atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(rec.grad_h, grad_h, atol=1e-12, rtol=1e-9)
    assert rec.param_grad_norm == pytest.approx(grad_params, rel=1e-9, abs=1e-12)
    assert model.training
    assert torch.isfinite(rec.jacobian_norm).all()


@pytest.mark.parametrize("arch", ARCHS)
def test_checkpoint_round_trip_keeps_gains_config_and_outputs(arch):
    model, task = model_of(arch, layer_norm=True, zoneout=0.2, num_layers=2, bidirectional=True)
    loaded = from_bytes(to_bytes(model)).double()
    assert loaded.cfg == model.cfg and loaded.cfg.layer_norm and loaded.cfg.zoneout == 0.2
    saved = model.state_dict()
    assert any(".gain_hh_l1_reverse" in k for k in saved)
    assert saved.keys() == loaded.state_dict().keys()
    for k, v in loaded.state_dict().items():
        torch.testing.assert_close(v, saved[k], atol=1e-7, rtol=0)  # float32 in the file
    x, _ = task.batch(3)
    model.eval(), loaded.eval()
    torch.testing.assert_close(loaded(x.double()), model(x.double()), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHS)
def test_describe_and_param_groups_hold_the_gains_in_their_layer(arch):
    model, _ = model_of(arch, layer_norm=True, num_layers=2, bidirectional=True)
    groups = model.param_groups()
    assert set().union(*map(set, groups.values())) == {n for n, _ in model.named_parameters()}
    per_direction = ["gain_ih", "gain_hh"] + (["gain_c", "bias_c"] if arch == "lstm" else [])
    for layer in (0, 1):
        for s in (f"_l{layer}", f"_l{layer}_reverse"):
            assert {f"rnn.{name}{s}" for name in per_direction} <= set(groups[f"layer {layer}"])
    parts = {part.name: part for part in model.describe()}
    named = dict(model.named_parameters())
    assert parts["layer 1"].parameters == sum(named[n].numel() for n in groups["layer 1"])
    assert not any("gain" in n for part in ("input", "head") for n in groups.get(part, []))


def test_fused_modules_are_kept_for_plain_cells_only():
    assert engine.ModelConfig(arch="lstm").uses_fused_kernel
    assert not engine.ModelConfig(arch="lstm", layer_norm=True).uses_fused_kernel
    assert not engine.ModelConfig(arch="gru", zoneout=0.1).uses_fused_kernel
    task = engine.make_task("adding", seq_len=8)
    model = engine.build_model(engine.ModelConfig(arch="gru", zoneout=0.1), task, seed=0)
    assert not isinstance(model.rnn, torch.nn.GRU)


def test_layer_norm_gains_start_at_one_and_leave_the_other_weights_as_without():
    task = engine.make_task("adding", seq_len=8)
    plain = engine.build_model(engine.ModelConfig(arch="lstm", peephole=True), task, seed=3)
    normed = engine.build_model(engine.ModelConfig(arch="lstm", peephole=True, layer_norm=True), task, seed=3)
    for name, p in plain.named_parameters():
        assert torch.equal(dict(normed.named_parameters())[name], p)
    assert torch.equal(normed.rnn.gain_ih_l0, torch.ones(4 * 64))
    assert torch.equal(normed.rnn.bias_c_l0, torch.zeros(64))


@pytest.mark.parametrize("fields, fragment", [
    (dict(zoneout=0.95), "zoneout must be in [0.0, 0.9]"),
    (dict(zoneout=-0.1), "zoneout must be in [0.0, 0.9]"),
    (dict(zoneout="0.1"), "zoneout must be a number"),
    (dict(layer_norm="yes"), "layer_norm must be True or False"),
    (dict(arch="transformer", layer_norm=True), "set layer_norm=False"),
    (dict(arch="transformer", zoneout=0.1), "set zoneout=0"),
])
def test_invalid_settings_say_what_to_change(fields, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        engine.ModelConfig(**fields)


def test_the_config_round_trips_through_its_dict():
    cfg = engine.ModelConfig(arch="gru", layer_norm=True, zoneout=0.15)
    assert engine.ModelConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.to_dict()["layer_norm"] is True and cfg.to_dict()["zoneout"] == 0.15


def test_layer_norm_normalises_each_gate_block_alone():
    a = torch.randn(2, 3 * H, dtype=torch.float64) * torch.tensor([1.0, 10.0, 100.0]).repeat_interleave(H)
    expected = F.layer_norm(a.reshape(2, 3, H), (H,), eps=LN_EPS).reshape(2, 3 * H)
    torch.testing.assert_close(normalise(a, 3), expected)
