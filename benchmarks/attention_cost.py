"""Attention: the engine's written-out multi-head attention, which keeps every head's weights for
engine.record, against the same layer through F.scaled_dot_product_attention, which keeps none.
Batch 32, T 128, d_model 128, 4 heads, 2 layers (the issue's case), causal and bidirectional.

    PYTHONPATH=. python benchmarks/attention_cost.py [--quick]
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from timing import interleaved, run_alone, table

import engine
from engine.attention import causal_mask, scaled_dot_product_attention
from engine.hooks import recording_blocks
from engine.transformer import SelfAttentionBlock, run_blocks

BATCH, T, D_MODEL, HEADS, LAYERS = 32, 128, 128, 4, 2


def sdpa_block(block: SelfAttentionBlock, x, causal: bool):
    """SelfAttentionBlock.forward with the library's attention kernel: the same weights and
    sublayers, no attention weights materialised for the caller."""
    mha = block.self_attention
    q, k, v = mha.split(mha.W_q(x)), mha.split(mha.W_k(x)), mha.split(mha.W_v(x))  # [B, h, T, d_k]
    context = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # [B, h, T, d_k]
    x = block.norm_1(x + block.dropout(mha.W_o(context.transpose(1, 2).flatten(2))))  # [B, T, d]
    return block.norm_2(x + block.dropout(block.feed_forward(x)))  # [B, T, d]


def sdpa_stack(model, x_in, causal: bool):
    for block in model.blocks:
        x_in = sdpa_block(block, x_in, causal)
    return x_in


def recorded_stack(model, x_in, causal: bool):
    """The engine's own path with every head's weights kept, as model.replay runs it for engine.record."""
    mask = causal_mask(x_in.shape[1], x_in.dtype) if causal else None
    with recording_blocks(model.cfg, {"encoder": model.blocks}, None):
        return run_blocks(model.blocks, x_in, mask=mask)


def forward_backward(stack, model, x_in, causal: bool) -> None:
    out = stack(model, x_in, causal)
    out.square().mean().backward()


def rows_for(causal: bool, repeats: int, budget: float) -> list[list]:
    task = engine.make_task("adding", seq_len=T)
    cfg = engine.ModelConfig(arch="transformer", hidden_size=D_MODEL, num_heads=HEADS, num_layers=LAYERS,
                             bidirectional=not causal)
    model = engine.build_model(cfg, task, seed=0).eval()  # eval: no dropout, both paths deterministic
    x, y = task.batch(BATCH, torch.Generator().manual_seed(0))
    x_in = model.inputs(x).detach()  # [B, T, d]
    with torch.no_grad():  # the two paths compute the same layer
        gap = (sdpa_stack(model, x_in, causal) - recorded_stack(model, x_in, causal)).abs().max().item()
    q, k, v = (torch.randn(BATCH, HEADS, T, D_MODEL // HEADS, requires_grad=True) for _ in range(3))
    mask = causal_mask(T) if causal else None
    times = interleaved({
        "core sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal).sum().backward(),
        "core written": lambda: scaled_dot_product_attention(q, k, v, mask).context.sum().backward(),
        "fwd sdpa": lambda: torch.no_grad()(sdpa_stack)(model, x_in, causal),
        "fwd written": lambda: torch.no_grad()(recorded_stack)(model, x_in, causal),
        "fb sdpa": lambda: forward_backward(sdpa_stack, model, x_in, causal),
        "fb written": lambda: forward_backward(recorded_stack, model, x_in, causal),
        "record": lambda: engine.record(model, x, y),
    }, repeats, budget)
    ms = {name: t * 1e3 for name, t in times.items()}
    kind = "causal" if causal else "bidirectional"
    core, forward = ms["core written"] / ms["core sdpa"], ms["fwd written"] / ms["fwd sdpa"]
    return [
        [f"attention alone, {kind}, fwd+bwd", ms["core sdpa"], ms["core written"], core, "", ""],
        [f"{LAYERS} blocks, {kind}, forward", ms["fwd sdpa"], ms["fwd written"], forward, "", ""],
        [f"{LAYERS} blocks, {kind}, fwd+bwd", ms["fb sdpa"], ms["fb written"], ms["fb written"] / ms["fb sdpa"],
         f"{gap:.1e}", ms["record"]],
    ]


def run(quick: bool) -> str:
    repeats, budget = (3, 0.05) if quick else (5, 0.2)
    rows = rows_for(True, repeats, budget) + rows_for(False, repeats, budget)
    return table(
        f"Attention: weights kept (engine, written out) vs F.scaled_dot_product_attention, "
        f"B={BATCH} T={T} d_model={D_MODEL} heads={HEADS}",
        ["case", "SDPA ms", "written-out, weights kept ms", "ratio", "max abs difference",
         "engine.record one sample ms"], rows)


if __name__ == "__main__":
    run_alone(run, "fewer and shorter repeats")
