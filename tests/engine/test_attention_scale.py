"""Why sqrt(d_k): a transformer with the 1/sqrt(d_k) removed (ModelConfig.attention_scale=False),
against references (torch's own attention with scale 1, the same weights with the scaling, the
softmax's backward written out), then trained beside the scaled one from the same seed."""
import math

import pytest
import torch
import torch.nn.functional as F

import engine
from engine.attention import causal_mask, scaled_dot_product_attention
from engine.multihead import MultiHeadAttention, saturation, softmax_entropy
from engine.rng import stream

from .test_validation import raises_saying


def transformer(task, scale, seed=0, **fields):
    cfg = engine.ModelConfig(arch="transformer", hidden_size=16, num_heads=2, attention_scale=scale, **fields)
    return engine.build_model(cfg, task, seed=seed).double().eval()


# ---------------------------------------------------------------- the layer

@pytest.mark.parametrize("scale", [True, False])
def test_attention_with_and_without_the_scaling_matches_torch(scale):
    q, k, v = (torch.randn(2, 3, 5, 8, dtype=torch.float64) for _ in range(3))  # [B, h, T, d_k]
    mask = causal_mask(5, torch.float64)
    a = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    reference = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=1 / math.sqrt(8) if scale else 1.0)
    torch.testing.assert_close(a.context, reference, atol=1e-12, rtol=0)
    raw = q @ k.transpose(-2, -1) + mask  # [B, h, T, T]
    torch.testing.assert_close(a.logits, raw / math.sqrt(8) if scale else raw, atol=1e-12, rtol=0)


def test_the_same_weights_unscaled_give_first_layer_logits_sqrt_dk_larger():
    task = engine.make_task("reverse", seq_len=5, symbols=4)
    scaled, unscaled = transformer(task, True), transformer(task, False)
    for (name, p), (_, p_unscaled) in zip(scaled.named_parameters(), unscaled.named_parameters()):
        assert torch.equal(p, p_unscaled), name  # the flag draws nothing
    x, y = task.batch(1)
    logits = [engine.record(m, x, y, jacobians=False).attention_logits["encoder layer 0 self"]
              for m in (scaled, unscaled)]  # each [heads, S, S]
    torch.testing.assert_close(logits[1], math.sqrt(8) * logits[0], atol=1e-12, rtol=1e-12)  # d_k = 16 / 2
    assert [m.self_attention.scale for m in unscaled.encoder] == [False]
    assert {p.score for p in unscaled.describe() if p.kind == "transformer block"} == {"dot"}
    assert {p.score for p in scaled.describe() if p.kind == "transformer block"} == {"scaled_dot"}


def test_attention_scale_round_trips_through_dicts_and_checkpoints():
    task = engine.make_task("reverse", seq_len=5, symbols=4)
    model = transformer(task, False).float()
    cfg = model.cfg
    assert engine.ModelConfig.from_dict(cfg.to_dict()) == cfg and cfg.to_dict()["attention_scale"] is False
    old = {k: v for k, v in cfg.to_dict().items() if k != "attention_scale"}  # a checkpoint from before the field
    assert engine.ModelConfig.from_dict(old).attention_scale is True
    loaded = engine.from_bytes(engine.to_bytes(model))
    assert loaded.cfg.attention_scale is False and loaded.encoder[0].self_attention.scale is False
    x, y = task.batch(3)
    torch.testing.assert_close(loaded.eval()(x, y), model(x, y), atol=0, rtol=0)


def test_bad_attention_scale_says_what_to_change():
    raises_saying(lambda: engine.ModelConfig(arch="lstm", attention_scale=False),
                  "attention_scale applies to arch='transformer' only", "True")
    raises_saying(lambda: engine.ModelConfig(arch="transformer", attention_scale="no"),
                  "attention_scale must be True or False", "'no'")
    raises_saying(lambda: engine.ModelConfig(arch="transformer", attention="dot"), "attention_scale=False")


# ---------------------------------------------------------------- measuring saturation

def test_saturation_is_the_recorded_rows_entropy_and_the_softmax_backward_written_out():
    task = engine.make_task("reverse", seq_len=5, symbols=4)
    model = transformer(task, False, num_layers=2)
    x, y = task.batch(1)
    measured = saturation(model, task.loss, x, y)
    weights = engine.record(model, x, y, jacobians=False).attention.values()  # each [heads, T_q, T_k]
    rows = torch.cat([-(w * w.clamp_min(1e-300).log()).sum(-1).flatten() for w in weights])
    assert measured.entropy == pytest.approx(rows.mean().item(), abs=1e-12)
    # Uniform rows: the encoder's 5 queries see 5 keys, the decoder's causal row t sees t + 1 of its
    # 6 inputs (<sos> and 5 symbols) and all 5 source keys; 2 heads each, and 2 layers of each alike.
    ceiling = 2 * [math.log(5)] * 5 + 2 * [math.log(t + 1) for t in range(6)] + 2 * [math.log(5)] * 6
    assert measured.uniform_entropy == pytest.approx(sum(ceiling) / len(ceiling), abs=1e-12)
    # dL/dz_ti = alpha_ti (g_ti - sum_j alpha_tj g_tj), from g = dL/dalpha read at the weights.
    alphas = []
    hooks = [m.hook_weights.register_forward_hook(lambda mod, i, out: alphas.append(out))
             for m in model.modules() if isinstance(m, MultiHeadAttention)]
    g = torch.autograd.grad(task.loss(model(x, y), y), alphas)
    for h in hooks:
        h.remove()
    dz = [a * (g_a - (a * g_a).sum(-1, keepdim=True)) for a, g_a in zip(alphas, g)]  # each [B, h, T_q, T_k]
    assert measured.logit_grad_norm == pytest.approx(torch.cat([d.flatten() for d in dz]).norm().item(), rel=1e-10)
    assert len(alphas) == 6 and all(p.grad is None for p in model.parameters())  # 2 encoder + 2 x 2 decoder sites


def test_saturation_needs_attention():
    task = engine.make_task("reverse", seq_len=5, symbols=4)
    model = engine.build_model(engine.ModelConfig(arch="gru", hidden_size=4), task)
    x, y = task.batch(2)
    raises_saying(lambda: saturation(model, task.loss, x, y), "transformer's attention")


# ---------------------------------------------------------------- the experiment

WIDE = dict(hidden_size=256, num_heads=1, dim_feedforward=256)  # one head: d_k = 256


def trained(scale: bool, steps: int):
    """The wide transformer on reversal, from seed 0: its saturation on the held-out batch before
    and after `steps` steps, and its held-out accuracy (greedy) after."""
    task = engine.make_task("reverse", seq_len=10, symbols=8)
    model = engine.build_model(engine.ModelConfig(arch="transformer", attention_scale=scale, **WIDE), task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=1e-3, batch_size=64,
                                                              clip_norm=1.0, seed=0))
    x, y = task.batch(256, stream(0, "held_out"))
    before = saturation(model, task.loss, x, y)
    trainer.step(steps)
    return before, saturation(model, task.loss, x, y), trainer.evaluate()[1]


@pytest.mark.training
def test_without_the_scaling_a_wide_head_saturates_its_softmax_and_its_gradient_dies():
    """Reversal of 10 symbols (8 of them), a one-layer transformer encoder-decoder with d_model 256
    and one head, so d_k = 256, d_ff 256; Adam, lr 1e-3, batch 64, clip 1.0; seed 0, the same for
    both: the flag draws nothing, so both start from the same weights. Saturation over every row
    of the three attention layers (encoder self, decoder self, cross) on 256 held-out samples,
    teacher-forced; accuracy of every target token, decoded greedily.

    Measured 2026-11-23 (torch 2.13.0+cpu, load 2-5, 50 steps ~9 s a model here), seeds 0 / 1 / 2:

                         scaled                    unscaled
    step 0   entropy     2.01 / 2.00 / 1.99 nats   0.64 / 0.59 / 0.52
             ||dL/dz||   .0013 / .0014 / .0013     .0010 / .0010 / .0009
    step 50  entropy     0.88 / 1.18 / 1.18        0.038 / 0.064 / 0.044
             ||dL/dz||   .0154 / .0171 / .0176     .0010 / .0007 / .0019  (9-26x smaller)
             accuracy    98.3 / 98.2 / 97.5 %      27.2 / 24.4 / 28.9 %
    (step 100: scaled 99.1-99.8%, unscaled 29-47%.)

    Unscaled, the logits' spread is sqrt(256) = 16 times the scaled one's from the start: the
    softmax is nearly one-hot already (0.6 nats where a uniform row over 10 keys has 2.3), and
    the first updates sharpen it further (the logits' standard deviation passed 100 by step 50),
    so each row passes on almost no gradient and the attention cannot move to the right key."""
    scaled_before, scaled, scaled_accuracy = trained(True, 50)
    unscaled_before, unscaled, unscaled_accuracy = trained(False, 50)
    assert unscaled_before.entropy < 0.4 * scaled_before.entropy  # measured 0.32
    assert 0.5 < unscaled_before.logit_grad_norm / scaled_before.logit_grad_norm < 1.5  # measured 0.78: not yet
    assert scaled.entropy > 0.7 and unscaled.entropy < 0.1  # measured 0.88 and 0.038
    assert unscaled.logit_grad_norm < scaled.logit_grad_norm / 5  # measured 15x smaller
    assert scaled_accuracy > 0.95 and unscaled_accuracy < 0.4  # measured 0.983 and 0.272


def test_softmax_entropy_is_shannons_in_nats_and_a_masked_key_adds_nothing():
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [2.0, -1.0, 0.5, float("-inf")]], dtype=torch.float64)
    p = torch.tensor([math.exp(2.0), math.exp(-1.0), math.exp(0.5)], dtype=torch.float64)
    p = p / p.sum()
    by_hand = -(p * p.log()).sum().item()  # the masked key left out of the sum
    assert softmax_entropy(logits).tolist() == pytest.approx([math.log(4), by_hand], rel=1e-12)
