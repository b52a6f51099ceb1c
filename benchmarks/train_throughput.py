"""Training throughput: engine.Trainer's step against a hand-written PyTorch loop (same model, same
batches, same Adam and clipping), and what recording on a probe sample adds per step, in one
process. Prints medians and their ratios.

    PYTHONPATH=. python benchmarks/train_throughput.py [--quick]
"""
from __future__ import annotations

import itertools

import torch
from timing import interleaved, run_alone, table

import engine
from app.session.lab import Lab
from app.session.link import DEFAULT
from app.session.probes import PROBE_SAMPLES, RECORD_EVERY

SHAPES = [(32, 100, 128), (1, 500, 64), (64, 50, 32)]  # batch, seq_len, hidden: the issue's
ARCHS = ("lstm", "gru", "rnn")
REFERENCE = ("lstm", 64, 50, 64, 1, False)  # the adding preset, which DESIGN.md measured by hand
LR, CLIP = 1e-3, 1.0
BATCH_POOL = 8  # distinct batches cycled through, so no step reuses a cached result


def cases(quick: bool) -> list[tuple]:
    """(arch, batch, T, H, layers, bidirectional): the issue's grid, the reference case first."""
    archs = ("lstm",) if quick else ARCHS
    grid = [(arch, b, t, h, layers, bi) for arch, (b, t, h), layers, bi
            in itertools.product(archs, SHAPES, (1, 2), (False, True))]
    return [REFERENCE] + grid


def case_name(arch, batch, T, H, layers, bi) -> str:
    return f"{arch} B={batch} T={T} H={H} L={layers}{' bi' if bi else ''}"


def plain_step(model, optimizer):
    """What a student would write by hand: forward, loss, backward, clip, step."""
    def step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        optimizer.step()
    return step


def one_sample(model, x, y):
    """The least a recording of sample 0 can cost: its forward and backward pass through the
    model's own kernel to every weight, nothing kept."""
    params = list(model.parameters())

    def forward_backward():
        return torch.autograd.grad(torch.nn.functional.mse_loss(model(x[:1]), y[:1]), params)
    return forward_backward


def cycling(step, batches):
    """A no-argument call that runs `step` on the next batch of the pool."""
    pool = itertools.cycle(batches)
    return lambda: step(*next(pool))


def measure_case(arch, batch, T, H, layers, bi, repeats, budget) -> list:
    task = engine.make_task("adding", seq_len=T)
    cfg = engine.ModelConfig(arch=arch, hidden_size=H, num_layers=layers, bidirectional=bi)
    gen = torch.Generator().manual_seed(0)
    batches = [task.batch(batch, gen) for _ in range(BATCH_POOL)]
    probe = task.batch(PROBE_SAMPLES, torch.Generator().manual_seed(1))
    plain_model = engine.build_model(cfg, task, seed=0)
    plain = plain_step(plain_model, torch.optim.Adam(plain_model.parameters(), lr=LR))
    model = engine.build_model(cfg, task, seed=0)
    trainer = engine.Trainer(model, task, engine.TrainConfig(optimizer="adam", lr=LR, batch_size=batch, clip_norm=CLIP))
    times = interleaved({
        "plain": cycling(plain, batches),
        "engine": cycling(trainer.train_step, batches),
        # What the Lab records every RECORD_EVERY steps: gates and dL/dh_t on probe sample 0.
        "record": lambda: engine.record(model, *probe, index=0, jacobians=False),
        "one sample": one_sample(model, *probe),
    }, repeats, budget)
    p, e, r, least = times["plain"], times["engine"], times["record"], times["one sample"]
    every = [(e + r / k) / p for k in (1, 10, RECORD_EVERY)]  # a record amortised over k steps
    return [case_name(arch, batch, T, H, layers, bi), p * 1e3, e * 1e3, e / p, r * 1e3, least * 1e3, r / least,
            *every, (e + least / 10) / p]


def app_loop(repeats: int, budget: float) -> str:
    """The Lab exactly as the Build & Train page drives it (adding preset, record every
    RECORD_EVERY steps), against the hand-written loop drawing its batches the same way."""
    lab = Lab(DEFAULT)
    task = engine.make_task("adding", seed=0)
    model = engine.build_model(DEFAULT.model, task, seed=0)
    step = plain_step(model, torch.optim.Adam(model.parameters(), lr=DEFAULT.train.lr))
    gen = torch.Generator().manual_seed(0)
    times = interleaved({
        "plain": lambda: step(*task.batch(DEFAULT.train.batch_size, gen)),
        "lab": lab.advance,
    }, repeats, budget)
    p, a = times["plain"], times["lab"]
    rows = [[f"adding preset, {case_name('lstm', 64, 50, 64, 1, False)}", p * 1e3, a * 1e3, a / p]]
    return table(f"What the app does: Lab.advance (record every {RECORD_EVERY} steps) vs the hand-written loop",
                 ["case", "plain ms/step", "Lab ms/step", "ratio"], rows)


def run(quick: bool) -> str:
    repeats, budget = (3, 0.05) if quick else (5, 0.15)
    rows = [measure_case(*case, repeats, budget) for case in cases(quick)]
    header = ["case", "plain ms/step", "engine ms/step", "ratio (target <= 1.1)", "record ms",
              "one sample fwd+bwd ms", "record / one sample", "record every step (target <= 1.5)",
              "every 10th (target <= 1.1)", f"every {RECORD_EVERY}th (the app)", "every 10th at one sample's cost"]
    grid = table("Training throughput: engine.Trainer.train_step vs hand-written loop, and recording per step",
                 header, rows)
    return grid + "\n" + app_loop(repeats, budget=0.5 if quick else 1.5)


if __name__ == "__main__":
    run_alone(run, "LSTM only, fewer and shorter repeats")
