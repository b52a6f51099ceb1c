"""The transformer against references: our blocks against nn.TransformerEncoderLayer and
nn.TransformerDecoderLayer given the same weights, its recording against autograd, causality
checked by moving the future; and building, training, saving and refusing like any model."""
import dataclasses

import pytest
import torch

import engine
from engine.attention import key_padding_mask, padding_mask
from engine.hooks import recording_blocks
from engine.transformer import DecoderBlock, SelfAttentionBlock

from .test_validation import raises_saying

TEXT = "the quick brown fox jumps over the lazy dog. " * 4
DOUBLE = dict(dtype=torch.float64)


def tiny(arch_kw=None, task="charlm", seed=0, **task_kw):
    task_kw = task_kw or dict(charlm=dict(seq_len=9, text=TEXT), reverse=dict(seq_len=5, symbols=5),
                              sentiment=dict(seq_len=8, max_vocab=30), adding=dict(seq_len=6),
                              masked_lm=dict(seq_len=9))[task]
    t = engine.make_task(task, **task_kw)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=8, num_heads=2, num_layers=2, **(arch_kw or {}))
    return t, engine.build_model(cfg, t, seed=seed).double()


# ---------------------------------------------------------------- blocks against PyTorch's layers

def copy_attention(ours, theirs):
    for name, w, b in zip("qkv", theirs.in_proj_weight.chunk(3), theirs.in_proj_bias.chunk(3)):
        getattr(ours, f"W_{name}").weight.copy_(w)
        getattr(ours, f"W_{name}").bias.copy_(b)
    ours.W_o.weight.copy_(theirs.out_proj.weight)
    ours.W_o.bias.copy_(theirs.out_proj.bias)


def randomise(module):
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.5)  # every weight, LayerNorm's and the biases too, off their defaults


def hooked_run(cfg, block, run):
    """run()'s output and what the block's attentions did, by kind, read at their hook points."""
    with recording_blocks(cfg, {"b": torch.nn.ModuleList([block])}, None) as cache:
        out = run()
    return out, {site.kind: attended for site, attended in cache.attention.items()}


def test_self_attention_block_equals_torch_transformer_encoder_layer():
    cfg = engine.ModelConfig(arch="transformer", hidden_size=12, num_heads=3, dim_feedforward=20)
    torch.manual_seed(0)
    theirs = torch.nn.TransformerEncoderLayer(12, 3, dim_feedforward=20, dropout=0.0, batch_first=True).double()
    randomise(theirs)
    ours = SelfAttentionBlock(cfg).double()
    with torch.no_grad():
        copy_attention(ours.self_attention, theirs.self_attn)
        for mine, its in [(ours.feed_forward.W_1, theirs.linear1), (ours.feed_forward.W_2, theirs.linear2),
                          (ours.norm_1, theirs.norm1), (ours.norm_2, theirs.norm2)]:
            mine.load_state_dict(its.state_dict())
    x = torch.randn(2, 6, 12, **DOUBLE)
    for mask in (None, engine.attention.causal_mask(6, torch.float64)):
        expected = theirs(x, src_mask=mask, is_causal=mask is not None)
        torch.testing.assert_close(ours(x, mask=mask), expected, atol=1e-12, rtol=1e-12)
    padded = torch.tensor([[False] * 6, [True, True, False, False, False, False]])  # front-padded, as the tasks pad
    expected = theirs(x, src_key_padding_mask=padded)
    out, maps = hooked_run(cfg, ours, lambda: ours(x, mask=padding_mask(padded, dtype=torch.float64)))
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    assert torch.all(maps["self"].weights[1, :, :, :2] == 0.0)


def test_decoder_block_equals_torch_transformer_decoder_layer():
    cfg = engine.ModelConfig(arch="transformer", hidden_size=12, num_heads=4, dim_feedforward=16)
    torch.manual_seed(1)
    theirs = torch.nn.TransformerDecoderLayer(12, 4, dim_feedforward=16, dropout=0.0, batch_first=True).double()
    randomise(theirs)
    ours = DecoderBlock(cfg).double()
    with torch.no_grad():
        copy_attention(ours.self_attention, theirs.self_attn)
        copy_attention(ours.cross_attention, theirs.multihead_attn)
        for mine, its in [(ours.feed_forward.W_1, theirs.linear1), (ours.feed_forward.W_2, theirs.linear2),
                          (ours.norm_1, theirs.norm1), (ours.norm_2, theirs.norm2), (ours.norm_3, theirs.norm3)]:
            mine.load_state_dict(its.state_dict())
    target, memory = torch.randn(2, 5, 12, **DOUBLE), torch.randn(2, 7, 12, **DOUBLE)
    mask = engine.attention.causal_mask(5, torch.float64)
    expected = theirs(target, memory, tgt_mask=mask, tgt_is_causal=True)
    out, maps = hooked_run(cfg, ours, lambda: ours(target, memory=memory, mask=mask))
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    assert maps["self"].weights.shape == (2, 4, 5, 5) and maps["cross"].weights.shape == (2, 4, 5, 7)
    padded = torch.tensor([[False] * 7, [True] * 3 + [False] * 4])  # the source's padding
    expected = theirs(target, memory, tgt_mask=mask, tgt_is_causal=True, memory_key_padding_mask=padded)
    out, maps = hooked_run(cfg, ours, lambda: ours(target, memory=memory, mask=mask,
                                                   memory_mask=padding_mask(padded, dtype=torch.float64)))
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=1e-12)
    assert torch.all(maps["cross"].weights[1, :, :, :3] == 0.0)


# ---------------------------------------------------------------- causality

def test_a_decoder_only_model_never_sees_the_future_and_an_encoder_does():
    for bidirectional in (False, True):  # an encoder on the masked task: a character model may not read ahead
        task, model = tiny(dict(bidirectional=bidirectional), task="masked_lm" if bidirectional else "charlm")
        model.eval()
        x, _ = task.batch(3)
        changed = x.clone()
        changed[:, 5:] = (changed[:, 5:] + 1) % task.spec.input_size
        with torch.no_grad():
            before, after = model(x), model(changed)
        if bidirectional:
            assert (before[:, :5] - after[:, :5]).abs().max() > 1e-3
        else:
            assert torch.equal(before[:, :5], after[:, :5])  # exactly: the future's weight is exactly 0


def test_without_positions_an_encoder_is_blind_to_order_and_with_them_it_is_not():
    """Self-attention alone is permutation-equivariant: shuffle the tokens and every output shuffles
    with them (Positions adds nothing for "none"); either position signal breaks that."""
    permutation = torch.tensor([3, 0, 8, 1, 5, 2, 7, 4, 6])
    for encoding in ("none", "sinusoidal", "learned"):
        task, model = tiny(dict(bidirectional=True, position_encoding=encoding), task="masked_lm")
        model.eval()
        x, _ = task.batch(3)  # [3, 9]
        with torch.no_grad():
            shuffled_outputs, outputs_of_shuffled = model(x)[:, permutation], model(x[:, permutation])  # [3, 9, V]
        if encoding == "none":
            torch.testing.assert_close(outputs_of_shuffled, shuffled_outputs, atol=1e-12, rtol=0)
        else:
            assert (outputs_of_shuffled - shuffled_outputs).abs().max() > 1e-3


@pytest.mark.parametrize("bidirectional", [True, False])
def test_no_word_of_a_review_looks_at_its_padding(bidirectional):
    """Sentiment front-pads its reviews: every real word gives the padding exactly 0 weight in
    every layer and head (an encoder's padding too), so the prediction, read at the last word
    (no pooling over positions), does not move whatever the padding's embedding; an unpadded
    review gives the same numbers as with no mask at all."""
    task, model = tiny(dict(bidirectional=bidirectional), task="sentiment")
    x = torch.stack([task.encode("was not good"), task.encode("a b c d e f g h")])  # [2, 8]: 5 pads, none
    padded = x == task.spec.pad_id
    assert padded[0].sum() == 5 and not padded[1].any()
    rec = engine.record(model, x, torch.tensor([0, 1]), index=0, jacobians=False)
    assert list(rec.attention) == ["layer 0 self", "layer 1 self"]
    looking = slice(None) if bidirectional else slice(5, None)  # a causal stack's front pads see only padding
    for weights in rec.attention.values():  # [heads, T, T]
        assert torch.all(weights[:, looking][..., padded[0]] == 0.0) and torch.isfinite(weights).all()
    model.eval()
    with torch.no_grad():
        before = model(x)
        model.embedding.weight[task.spec.pad_id] += 5.0
        assert torch.equal(model(x), before)
        plain = engine.build_model(model.cfg, dataclasses.replace(task.spec, pad_id=None)).double().eval()
        plain.load_state_dict(model.state_dict())
        assert torch.equal(plain(x[1:]), model(x[1:]))


# ---------------------------------------------------------------- the recording

def manual_forward(model, x):
    """The single-stack model by hand, block by block, each output kept for retain_grad."""
    h = model.positions(model.embedding(x))  # [1, T, d]
    mask = None if model.cfg.bidirectional else engine.attention.causal_mask(x.shape[1], torch.float64)
    if model.spec.pad_id is not None and model.cfg.bidirectional:
        mask = key_padding_mask(x == model.spec.pad_id, torch.float64)  # [1, 1, 1, T]
    outputs = []
    for block in model.blocks:
        h = block(h, mask=mask)
        h.retain_grad()
        outputs.append(h)
    return model.readout(h), outputs


@pytest.mark.parametrize("task_name, bidirectional", [("charlm", False), ("sentiment", True), ("adding", False)])
def test_recording_holds_every_head_and_gradients_equal_autograd(task_name, bidirectional):
    task, model = tiny(dict(bidirectional=bidirectional), task=task_name)
    x, y = task.batch(3)
    if task.spec.input_kind == "values":
        x, y = x.double(), y.double()
    rec = engine.record(model, x, y, index=1)
    T = x.shape[1]
    stack = "encoder" if bidirectional else "decoder"
    assert rec.arch == "transformer" and list(rec.stacks) == [stack]
    assert list(rec.attention) == ["layer 0 self", "layer 1 self"]
    for name, weights in rec.attention.items():
        assert weights.shape == (2, T, T)  # [heads, T_query, T_key]
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, T, **DOUBLE), atol=1e-12, rtol=0)
        torch.testing.assert_close(rec.attention_logits[name].softmax(-1), weights, atol=1e-14, rtol=0)
        assert rec.attention_context[name].shape == (2, T, 4)
        if not bidirectional:
            assert torch.all(weights[:, torch.ones(T, T, dtype=torch.bool).triu(1)] == 0)
    # Reference: the same network by hand, retain_grad on every block's output.
    y_hat, outputs = manual_forward(model, x[1:2])
    loss = task.loss(y_hat, y[1:2])
    loss.backward()
    torch.testing.assert_close(rec.y_hat, y_hat[0].detach(), atol=1e-12, rtol=0)
    assert rec.loss == pytest.approx(loss.item(), rel=1e-12)
    torch.testing.assert_close(rec.hidden, torch.stack([o[0].detach() for o in outputs])[:, None], atol=1e-12, rtol=0)
    torch.testing.assert_close(rec.grad_h, torch.stack([o.grad[0] for o in outputs])[:, None], atol=1e-12, rtol=1e-9)
    assert rec.grad_norm_h.shape == (2, 1, T) and rec.jacobian_norm is None and rec.cell is None and rec.gates == {}
    for name, p in model.named_parameters():
        expected = p.grad.norm().item() if p.grad is not None else 0.0
        assert rec.param_grad_norm[name] == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert len(rec.to_frame("hidden")) == 2 * T * 8


def test_encoder_decoder_recording_has_self_and_cross_attention():
    task, model = tiny(task="reverse")
    x, y = task.batch(2)
    rec = engine.record(model, x, y)
    assert list(rec.stacks) == ["encoder", "decoder"]
    assert rec.stacks["encoder"].hidden.shape == (2, 1, 5, 8) and rec.stacks["decoder"].hidden.shape == (2, 1, 6, 8)
    assert rec.attention["encoder layer 1 self"].shape == (2, 5, 5)
    assert rec.attention["decoder layer 0 self"].shape == (2, 6, 6)
    assert rec.attention["decoder layer 1 cross"].shape == (2, 6, 5)  # target steps over source tokens
    assert torch.all(rec.attention["decoder layer 0 self"][:, torch.ones(6, 6, dtype=torch.bool).triu(1)] == 0)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(rec.y_hat, model(x[:1], y[:1])[0], atol=1e-12, rtol=0)
    assert all(g.abs().sum() > 0 for g in (rec.stacks["encoder"].grad_h, rec.stacks["decoder"].grad_h))
    frame = rec.to_frame("attention")  # long form for the charts: name, head, query, key, value
    cross = frame[frame.name == "decoder layer 1 cross"]
    assert len(cross) == 2 * 6 * 5 and cross.value.tolist() == rec.attention["decoder layer 1 cross"].flatten().tolist()


# ---------------------------------------------------------------- building, training, saving

def test_every_task_shape_builds_the_right_transformer():
    for task_name, kind in [("charlm", engine.TransformerModel), ("sentiment", engine.TransformerModel),
                            ("reverse", engine.TransformerEncoderDecoder)]:
        task, model = tiny(task=task_name)
        assert isinstance(model, kind)
    sine = engine.make_task("sine", seq_len=7, mode="generate")
    model = engine.build_model(engine.ModelConfig(arch="transformer", hidden_size=8, num_heads=2), sine)
    x, _ = sine.batch(4)
    assert model(x).shape == (4, 7, 1)


@pytest.mark.parametrize("task_name, kw", [
    ("charlm", dict(position_encoding="learned", dropout=0.1)),
    ("adding", dict(bidirectional=True, dim_feedforward=12)),
    ("reverse", dict(position_encoding="learned")),
])
def test_transformers_train_with_clipping_save_and_load(task_name, kw, tmp_path):
    task, model = tiny(kw, task=task_name, seed=3)
    model.float()
    trainer = engine.Trainer(model, task, engine.TrainConfig(lr=1e-2, batch_size=16, clip_norm=0.5))
    first = trainer.evaluate()[0]
    stats = trainer.step(30)
    assert trainer.diverged_at is None and trainer.evaluate()[0] < first
    assert all(s.grad_norm_clipped <= 0.5 + 1e-6 for s in stats)
    trainer.freeze("layer 0" if task_name != "reverse" else "encoder layer 0")
    loaded = engine.load(engine.save(model, tmp_path / "transformer.safetensors"))
    assert loaded.cfg == model.cfg and type(loaded) is type(model)
    x, _ = task.batch(4)
    model.eval(), loaded.eval()
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))


# ---------------------------------------------------------------- bad input

def test_bad_transformer_settings_say_what_to_change():
    raises_saying(lambda: engine.ModelConfig(arch="transformer", hidden_size=64, num_heads=5),
                  "num_heads=5", "does not divide hidden_size (d_model) = 64", "[1, 2, 4, 8, 16]")
    raises_saying(lambda: engine.ModelConfig(arch="transformer", attention="dot"), "leave attention=None")
    raises_saying(lambda: engine.ModelConfig(arch="transformer", init="orthogonal"), "init='default'")
    raises_saying(lambda: engine.ModelConfig(arch="lstm", num_heads=4), "num_heads", "arch='transformer'")
    raises_saying(lambda: engine.ModelConfig(arch="gru", position_encoding="learned"), "position_encoding")
    raises_saying(lambda: engine.ModelConfig(arch="transformer", position_encoding="rotary"), "sinusoidal, learned")
    reverse = engine.make_task("reverse", seq_len=4)
    raises_saying(lambda: engine.build_model(engine.ModelConfig(arch="transformer", reverse_source=True), reverse),
                  "reverse_source=False")
    task, model = tiny()
    raises_saying(lambda: engine.Trainer(model, task, engine.TrainConfig(bptt_window=3)), "bptt_window=0")
    raises_saying(lambda: model(torch.zeros(2, 0, dtype=torch.long)), "empty")
    _, encdec = tiny(task="reverse")
    raises_saying(lambda: encdec(torch.zeros(2, 0, dtype=torch.long)), "empty source")
