"""Transformers training on F.scaled_dot_product_attention (issue 17, item 3): one training step of
the engine's transformer (its blocks ask for no weights, so MultiHeadAttention takes the fused
kernel) against the same blocks with each attention replaced by a bare call of the library kernel
(the reference: no switch, no hook points), and against the same model forced down the written-out
path by a no-op hook on every attention hook point (what every step cost before, and what a
recording still runs). The same hand-written step for all three: forward, loss, backward,
clip_grad_norm_(1.0), Adam; each with its own copy of the weights, the same batches.

Cases: the app's small transformers at their presets' sizes and batches (app/session/transformers.py),
then the char-LM's model at T = 128 and 512. Timed as timing.interleaved times (medians, the three
taking turns), on two clocks at once: the wall clock, as every other table, and this thread's CPU
time, which torch on one thread spends entirely here (backward included), so other processes that
preempt it on a shared machine leave it alone.

    PYTHONPATH=. python benchmarks/sdpa.py [--quick]
"""
from __future__ import annotations

import copy
import itertools
import statistics
import time

import torch
import torch.nn.functional as F
from timing import calls_for, run_alone, table
from torch import Tensor, nn

import engine
from app.session.link import Setup
from app.session.transformers import CHAR_LM, REVERSAL, SENTIMENT_ENCODER
from engine.losses import compute_loss
from engine.multihead import MultiHeadAttention

LR, CLIP = 1e-3, 1.0
BATCH_POOL = 8  # distinct batches cycled through
LONG = [(128, 32), (512, 8)]  # (T, batch) for the char-LM's model on long inputs; batch 8 keeps T=512 short


class LibraryAttention(nn.Module):
    """A MultiHeadAttention's weights around a bare F.scaled_dot_product_attention: what a student
    would write with the library, the reference the engine's switch is measured against."""

    def __init__(self, mha: MultiHeadAttention):
        super().__init__()
        self.mha = mha

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None,
                need_weights: bool = False) -> tuple[Tensor, None]:
        mha = self.mha
        q, k, v = mha.split(mha.W_q(query)), mha.split(mha.W_k(key)), mha.split(mha.W_v(value))  # [B, h, T, d_k]
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=None if mha.scale else 1.0)
        return mha.W_o(context.transpose(1, 2).flatten(2)), None  # [B, T_q, d]


def on_library(model: nn.Module) -> nn.Module:
    """A copy of the model whose every attention is a LibraryAttention on the same weights."""
    model = copy.deepcopy(model)
    for block in [m for m in model.modules() if hasattr(m, "attentions")]:
        for kind in block.attentions():
            name = f"{kind}_attention"
            setattr(block, name, LibraryAttention(getattr(block, name)))
    return model


def written_out(model: nn.Module) -> nn.Module:
    """A copy of the model with a no-op forward hook on every attention hook point, as a recording
    hooks them: every attention is then computed written out, weights and all."""
    model = copy.deepcopy(model)
    for mha in [m for m in model.modules() if isinstance(m, MultiHeadAttention)]:
        for point in (mha.hook_logits, mha.hook_weights, mha.hook_context):
            point.register_forward_hook(lambda module, inputs, out: None)
    return model


def hand_step(model: nn.Module, loss_kind: str):
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)

    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        compute_loss(loss_kind, model(x, y), y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
    return step


def two_clocks(fns: dict, repeats: int, budget: float) -> dict[str, tuple[float, float]]:
    """Median (wall, thread CPU) seconds per call of each fn, the fns taking turns in every repeat."""
    calls = {name: calls_for(fn, budget) for name, fn in fns.items()}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.thread_time()
            for _ in range(calls[name]):
                fn()
            samples[name].append(((time.perf_counter() - wall) / calls[name], (time.thread_time() - cpu) / calls[name]))
    return {name: tuple(statistics.median(clock) for clock in zip(*values)) for name, values in samples.items()}


def cycling(step, batches):
    pool = itertools.cycle(batches)
    return lambda: step(*next(pool))


def cases(quick: bool) -> list[tuple[str, Setup, int | None, int]]:
    """(name, setup, seq_len or None for the preset's, batch)."""
    presets = [("char-LM", CHAR_LM), ("reversal (encoder-decoder)", REVERSAL),
               ("sentiment (padded encoder)", SENTIMENT_ENCODER)]
    rows = [(name, setup, None, setup.train.batch_size) for name, setup in presets]
    long = LONG[:1] if quick else LONG
    return rows + [("char-LM", CHAR_LM, T, batch) for T, batch in long]


def measure(name: str, setup: Setup, seq_len: int | None, batch: int, repeats: int, budget: float) -> list:
    params = dict(setup.task_params, **({"seq_len": seq_len} if seq_len else {}))
    task = engine.make_task(setup.task, **params)
    model = engine.build_model(setup.model, task, seed=0)
    gen = torch.Generator().manual_seed(0)
    batches = [task.batch(batch, gen) for _ in range(BATCH_POOL)]
    library, written = on_library(model), written_out(model)
    x, y = batches[0]
    with torch.no_grad():  # the three compute the same function
        out = model.eval()(x, y)
        gap = max((other.eval()(x, y) - out).abs().max().item() for other in (library, written))
    for m in (model, library, written):
        m.train()
    loss = task.spec.loss
    times = two_clocks({
        "library": cycling(hand_step(library, loss), batches),
        "engine": cycling(hand_step(model, loss), batches),
        "written": cycling(hand_step(written, loss), batches),
    }, repeats, budget)
    (lib_wall, lib), (eng_wall, eng), (wri_wall, wri) = (
        (wall * 1e3, cpu * 1e3) for wall, cpu in (times[k] for k in ("library", "engine", "written")))
    cfg = setup.model
    T = seq_len or x.shape[1]
    case = f"{name}, d={cfg.hidden_size} h={cfg.num_heads} L={cfg.num_layers} T={T} B={batch}"
    return [case, lib, eng, eng / lib, wri, wri / eng, eng_wall / lib_wall, wri_wall / eng_wall, f"{gap:.1e}"]


def run(quick: bool) -> str:
    # 9 repeats, not the other tables' 5: the three candidates differ by a few percent at the small
    # sizes, less than one repeat scatters on a shared machine.
    repeats, budget = (3, 0.05) if quick else (9, 0.3)
    torch.manual_seed(0)
    rows = [measure(*case, repeats, budget) for case in cases(quick)]
    return table(
        "Transformer training step: the engine (fused unless hooked) vs the same blocks on bare SDPA, "
        "and vs written out (thread CPU ms; wall-clock ratios beside)",
        ["case", "bare SDPA ms/step", "engine ms/step", "ratio (target <= 1.05)", "written out ms/step (before)",
         "written out / engine", "wall: engine / bare", "wall: written out / engine", "max abs output difference"],
        rows)


if __name__ == "__main__":
    run_alone(run, "fewer repeats, T=128 only of the long inputs")
