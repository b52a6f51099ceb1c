"""Typed recordings: attention traces keyed by Site, transformer stacks as BlockTraces, recorded
through hook points that are always removed, on the forward pass itself."""
import pytest
import torch

import engine
from engine.attention import scaled_dot_product_attention
from engine.recording import BlockTrace
from engine.sites import Site


def transformer(task_name="reverse", **cfg):
    task = engine.make_task(task_name, seq_len=5)
    config = engine.ModelConfig(arch="transformer", hidden_size=8, num_heads=2, num_layers=2, **cfg)
    return task, engine.build_model(config, task, seed=0).double()


def hooks_left(model):
    return [name for name, m in model.named_modules() if m._forward_hooks or m._forward_pre_hooks]


def test_sites_carry_the_display_labels():
    assert Site("decoder", 0, "cross").label == "decoder layer 0 cross"
    assert Site("encoder", 1, "self").label == "encoder layer 1 self"
    assert Site("decoder", 1, "self", alone=True).label == "layer 1 self"
    assert engine.sites.ALIGNMENT.label == "alignment"
    with pytest.raises(ValueError, match="self, cross, alignment"):
        Site("decoder", 0, "sideways")


def test_every_trace_is_keyed_by_its_site_and_read_by_its_label():
    task, model = transformer()
    rec = engine.record(model, *task.batch(2))
    sites = list(rec.attention_traces)
    assert sites == [Site("encoder", 0, "self"), Site("encoder", 1, "self"), Site("decoder", 0, "self"),
                     Site("decoder", 0, "cross"), Site("decoder", 1, "self"), Site("decoder", 1, "cross")]
    for site, trace in rec.attention_traces.items():
        assert trace.site == site
        assert rec.attention[site.label] is trace.weights
        assert rec.attention_logits[site.label] is trace.logits and rec.attention_context[site.label] is trace.context
    assert [s.label for s in sites if s.kind == "cross"] == ["decoder layer 0 cross", "decoder layer 1 cross"]
    with pytest.raises(KeyError, match="no attention named 'layer 0 self'; this recording has encoder layer 0 self"):
        rec.attention["layer 0 self"]


def test_the_hooked_trace_is_what_each_head_computed():
    """The hook points read logits, weights and context where the forward pass computes them:
    the same as scaled dot-product attention on the layer's own projections, head by head."""
    task, model = transformer("parity", bidirectional=True)
    x, y = task.batch(1)  # parity: x values [1, T, 1], y classes [1, T]
    rec = engine.record(model, x.double(), y, jacobians=False)
    block, attention = model.blocks[1], model.blocks[1].self_attention
    x_in = rec.hidden[0, 0][None]  # [1, T, d]: block 1 reads block 0's output
    q, k, v = (attention.split(W(x_in)) for W in (attention.W_q, attention.W_k, attention.W_v))  # [1, h, T, d_k]
    expected = scaled_dot_product_attention(q, k, v)
    trace = rec.attention_traces[Site("encoder", 1, "self", alone=True)]
    torch.testing.assert_close(trace.weights, expected.weights[0].detach(), atol=1e-12, rtol=0)
    torch.testing.assert_close(trace.logits, expected.logits[0].detach(), atol=1e-12, rtol=0)
    torch.testing.assert_close(trace.context, expected.context[0].detach(), atol=1e-12, rtol=0)
    assert block.attentions() == {"self": attention}


def test_a_transformer_stack_is_a_block_trace_and_says_what_it_lacks():
    task, model = transformer()
    rec = engine.record(model, *task.batch(1))
    assert all(isinstance(trace, BlockTrace) for trace in rec.stacks.values())
    assert rec.cell is None and rec.gates == {} and rec.jacobian_norm is None
    assert len(rec.to_frame("grad_norm_h", "decoder")) == 2 * 6
    with pytest.raises(ValueError, match="a transformer block has no gates"):
        rec.to_frame("gates")
    with pytest.raises(ValueError, match="no recurrent weights W_hh"):
        _ = rec.eigenvalues


def test_recording_leaves_no_hook_behind_even_when_the_forward_pass_fails(monkeypatch):
    task, model = transformer()
    x, y = task.batch(1)
    engine.record(model, x, y)
    assert hooks_left(model) == []

    def failing(*args, **kwargs):
        assert hooks_left(model) != []  # the recording's hooks were in place...
        raise RuntimeError("feed-forward failed")

    monkeypatch.setattr(model.decoder[1].feed_forward, "forward", failing)
    with pytest.raises(RuntimeError, match="feed-forward failed"):
        engine.record(model, x, y)
    assert hooks_left(model) == []  # ...and are gone


def test_training_runs_through_the_same_hook_points_with_nothing_attached():
    """forward and the recording are one code path: the recorded y_hat is forward's, and
    forward outside a recording passes every hook point unhooked."""
    task, model = transformer()
    x, y = task.batch(2)
    hook_points = [name for name, m in model.named_modules() if isinstance(m, engine.hooks.HookPoint)]
    assert len(hook_points) == 4 + 6 * 3  # hook_out of 4 blocks; logits, weights and context of 6 attentions
    model.eval()
    with torch.no_grad():
        expected = model(x[:1], y[:1])[0]
    torch.testing.assert_close(engine.record(model, x, y).y_hat, expected, atol=1e-12, rtol=0)
    assert hooks_left(model) == []
