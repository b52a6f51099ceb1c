"""Transformers train on F.scaled_dot_product_attention (engine/multihead.py): the fused path against
the written-out one, which stays the reference, and the switch between them, which must hand every
hooked attention (a recording, saturation, beam search) the written-out path."""
import pytest
import torch
import torch.nn.functional as F

import engine
from engine.attention import causal_mask, padding_mask
from engine.hooks import hooked
from engine.multihead import MultiHeadAttention, saturation
from engine.sites import Site

# Float64: both paths agree to rounding. Float32: the fused kernel sums in another order (an online
# softmax over key blocks), so outputs differ by about 1e-7 and gradients by about 1e-6.
TOLERANCE = {torch.float64: dict(atol=1e-12, rtol=1e-10), torch.float32: dict(atol=2e-5, rtol=1e-4)}


def fused_calls(monkeypatch) -> list:
    """Counts the calls of the fused kernel from here on."""
    calls = []
    kernel = F.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return kernel(*args, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", counting)
    return calls


def layer_inputs(kind: str, dtype: torch.dtype, seed: int = 0):
    """query [B, T_q, d], key = value [B, T_k, d] and the mask a model would give them: an encoder's
    padding mask, a causal (decoder) mask with padding, or cross-attention over a padded source.
    Sample 1 is front-padded, sample 2 nothing but padding (the models' masks never leave a row empty)."""
    g = torch.Generator().manual_seed(seed)
    T_q, T_k = (6, 9) if kind == "cross" else (9, 9)
    padded = torch.zeros(3, T_k, dtype=torch.bool)  # [B, T_k]
    padded[1, :3] = True
    padded[2] = True
    query = torch.randn(3, T_q, 24, generator=g, dtype=dtype, requires_grad=True)
    source = query if kind != "cross" else torch.randn(3, T_k, 24, generator=g, dtype=dtype, requires_grad=True)
    mask = {"encoder": padding_mask(padded, dtype=dtype), "causal": padding_mask(padded, True, dtype),
            "cross": padding_mask(padded, dtype=dtype), "causal alone": causal_mask(T_k, dtype)}[kind]
    return query, source, mask


def output_and_gradients(mha: MultiHeadAttention, query, source, mask, need_weights: bool):
    out, heads = mha(query, source, source, mask, need_weights=need_weights)  # [B, T_q, d]
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype)  # [B, T_q, d]
    inputs = [query] if source is query else [query, source]
    grads = torch.autograd.grad((out * weights).sum(), [*inputs, *mha.parameters()])
    return out, heads, grads


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("kind", ["encoder", "causal", "causal alone", "cross"])
@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("heads", [1, 3, 4])
def test_the_fused_path_computes_the_written_out_output_and_gradients(dtype, kind, scale, heads, monkeypatch):
    torch.manual_seed(heads)
    mha = MultiHeadAttention(24, heads, scale).to(dtype)
    query, source, mask = layer_inputs(kind, dtype)
    written_out, weights, expected = output_and_gradients(mha, query, source, mask, need_weights=True)
    calls = fused_calls(monkeypatch)
    fused, none, grads = output_and_gradients(mha, query, source, mask, need_weights=False)
    assert len(calls) == 1 and none is None and weights is not None  # each path taken where expected
    torch.testing.assert_close(fused, written_out, **TOLERANCE[dtype])
    for got, want in zip(grads, expected, strict=True):
        torch.testing.assert_close(got, want, **TOLERANCE[dtype])


def test_an_empty_source_is_refused_on_the_fused_path_too():
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="source is empty"):
        mha(torch.randn(1, 3, 8), torch.randn(1, 0, 8), torch.randn(1, 0, 8), need_weights=False)


# ---------------------------------------------------------------- the switch

def hook_points(mha: MultiHeadAttention):
    return {"logits": mha.hook_logits, "weights": mha.hook_weights, "context": mha.hook_context}


@pytest.mark.parametrize("point", ["logits", "weights", "context"])
@pytest.mark.parametrize("how", ["forward", "forward_pre", "full_backward"])
def test_one_hooked_point_sends_its_layer_down_the_written_out_path(point, how, monkeypatch):
    mha = MultiHeadAttention(24, 3).double()
    query, source, mask = layer_inputs("causal", torch.float64)
    seen = []
    register = getattr(hook_points(mha)[point], f"register_{how}_hook")
    handle = register(lambda module, *values: seen.append(values))
    calls = fused_calls(monkeypatch)
    out, heads, _ = output_and_gradients(mha, query, source, mask, need_weights=False)
    assert calls == [] and len(seen) == 1 and heads is not None  # the hook saw the written-out value
    handle.remove()
    again, none, _ = output_and_gradients(mha, query, source, mask, need_weights=False)
    assert len(calls) == 1 and none is None and len(seen) == 1  # unhooked: fused again
    torch.testing.assert_close(again, out, **TOLERANCE[torch.float64])


def test_a_global_module_hook_also_keeps_the_written_out_path(monkeypatch):
    mha = MultiHeadAttention(24, 3).double()
    query, source, mask = layer_inputs("encoder", torch.float64)
    seen = []
    calls = fused_calls(monkeypatch)
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda module, inputs, out: seen.append(module) if module is mha.hook_weights else None)
    try:
        mha(query, source, source, mask, need_weights=False)
    finally:
        handle.remove()
    assert calls == [] and seen == [mha.hook_weights]


def tiny_model(task_name: str, **fields):
    task = engine.make_task(task_name, seq_len=7, **({"symbols": 5} if task_name == "reverse" else {}))
    cfg = engine.ModelConfig(arch="transformer", hidden_size=16, num_heads=4, num_layers=2, **fields)
    return task, engine.build_model(cfg, task, seed=0)


@pytest.mark.parametrize("task_name, fields", [("charlm", {}), ("sentiment", dict(bidirectional=True)),
                                               ("reverse", dict(attention_scale=False))])
def test_training_is_fused_and_a_recording_after_it_holds_the_written_out_weights(task_name, fields, monkeypatch):
    task, model = tiny_model(task_name, **fields)
    attentions = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    calls = fused_calls(monkeypatch)
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=1e-2, batch_size=8))
    for _ in range(3):
        trainer.train_step(*task.batch(8))
    assert len(calls) == 3 * len(attentions)  # every attention of every step, fused
    # Record, keeping what each attention was handed, to compute its weights written out by hand.
    handed = {}
    keep = [(m, lambda module, args: handed.__setitem__(module, args)) for m in attentions]
    handles = [m.register_forward_pre_hook(hook) for m, hook in keep]
    x, y = task.batch(4)
    try:
        rec = engine.record(model, x, y, index=2, jacobians=False)
    finally:
        for handle in handles:
            handle.remove()
    assert len(calls) == 3 * len(attentions)  # the recording computed none fused
    assert set(rec.attention_traces) == set(sites_of(model))
    with torch.no_grad():
        for site, mha in sites_of(model).items():
            _, written = mha(*handed[mha])  # need_weights defaults to True: written out
            trace = rec.attention_traces[site]
            assert torch.equal(trace.weights, written.weights[0])
            assert torch.equal(trace.logits, written.logits[0]) and torch.equal(trace.context, written.context[0])
            torch.testing.assert_close(trace.weights.sum(-1), torch.ones(trace.weights.shape[:-1]), atol=1e-6, rtol=0)


def sites_of(model) -> dict[Site, MultiHeadAttention]:
    """Every attention of the model by the Site a recording files it under."""
    stacks = {"encoder": model.encoder, "decoder": model.decoder} if hasattr(model, "decoder") else {
        model.stack_name: model.blocks}
    return {Site(stack, layer, kind, alone=len(stacks) == 1): attention
            for stack, blocks in stacks.items() for layer, block in enumerate(blocks)
            for kind, attention in block.attentions().items()}


def test_saturation_and_hooked_forward_passes_read_the_written_out_values(monkeypatch):
    task, model = tiny_model("charlm")
    x, y = task.batch(4)
    calls = fused_calls(monkeypatch)
    s = saturation(model, task.loss, x, y)
    assert calls == [] and 0 < s.entropy <= s.uniform_entropy and s.logit_grad_norm > 0
    rows = []
    first = model.blocks[0].self_attention
    with hooked([(first.hook_weights, lambda module, inputs, out: rows.append(out))]):
        model.eval()(x, y)
    assert len(calls) == 1  # the unhooked second layer only
    assert rows[0].shape == (4, 4, 7, 7)
    torch.testing.assert_close(rows[0].sum(-1), torch.ones(4, 4, 7), atol=1e-6, rtol=0)
