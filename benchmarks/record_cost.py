"""Recording cost: engine.record on one sample against the least a replay can cost (the written-out
forward over the sample and one backward, nothing kept), and what the Jacobian norms add as T grows.

    PYTHONPATH=. python benchmarks/record_cost.py [--quick]
"""
from __future__ import annotations

import itertools

import torch
from timing import interleaved, run_alone, table

import engine
from engine.losses import compute_loss
from engine.record import jacobian_norms, opened
from engine.recurrent import replay_stack
from engine.replay import Taps

SEQ_LENS, HIDDENS, ARCHS, LAYERS = (100, 500), (64, 128), ("lstm", "gru"), (1, 2)
GROWTH_SEQ_LENS = (100, 200, 400, 800)  # Jacobian norms should cost about the same per step
GROWTH_CASE = ("lstm", 64, 1)


def sample_model(arch: str, T: int, H: int, layers: int):
    """A model on the adding problem and one batch of probe samples, as the Lab holds them."""
    task = engine.make_task("adding", seq_len=T)
    model = engine.build_model(engine.ModelConfig(arch=arch, hidden_size=H, num_layers=layers), task, seed=0)
    x, y = task.batch(8, torch.Generator().manual_seed(1))
    return model, x, y


def minimal_replay(model, x, y) -> None:
    """The floor for a recording: the written-out forward over one sample (no taps, no gates
    kept) and one backward to the weights."""
    xs, ys = x[:1], y[:1]
    with torch.enable_grad():
        _, out = replay_stack(model.cfg, model.rnn, model.inputs(xs), keep_gates=False)
        loss = compute_loss(model.spec.loss, model.readout(out), ys)
        torch.autograd.grad(loss, list(model.parameters()))


def record_row(arch, T, H, layers, repeats, budget) -> list:
    model, x, y = sample_model(arch, T, H, layers)
    times = interleaved({
        "replay": lambda: minimal_replay(model, x, y),
        "record": lambda: engine.record(model, x, y, jacobians=False),
        "jacobians": lambda: engine.record(model, x, y, jacobians=True),
        "spectra": lambda: engine.weight_spectra(model),
    }, repeats, budget)
    replay, rec, jac, spectra = (times[k] * 1e3 for k in ("replay", "record", "jacobians", "spectra"))
    return [f"{arch} T={T} H={H} L={layers}", replay, rec, rec / replay, spectra,
            (rec + spectra) / replay, jac, (jac - rec) / jac]


def growth_row(T: int, repeats: int, budget: float) -> list:
    """jacobian_norms alone on a replayed sample, and the spectral norms inside it."""
    arch, H, layers = GROWTH_CASE
    model, x, y = sample_model(arch, T, H, layers)
    with opened(model):
        stack = model.replay(x[:1], y[:1], Taps()).stacks["rnn"]
        jacobians = torch.randn(T, H, H)  # [T, H, H]: the size of J_t for every t
        times = interleaved({
            "all": lambda: jacobian_norms(stack),
            "norms": lambda: torch.linalg.matrix_norm(jacobians, ord=2),
        }, repeats, budget)
    total, norms = times["all"] * 1e3, times["norms"] * 1e3
    return [T, total, total / T * 1e3, norms, norms / T * 1e3]


def run(quick: bool) -> str:
    repeats, budget = (3, 0.05) if quick else (5, 0.2)
    grid = [(a, t, h, n) for a, t, h, n in itertools.product(ARCHS, SEQ_LENS, HIDDENS, LAYERS)]
    if quick:
        grid = [c for c in grid if c[1] == SEQ_LENS[0] and c[3] == 1]
    rows = [record_row(*case, repeats, budget) for case in grid]
    costs = table(
        "Recording one sample: engine.record vs the minimal replay (written-out forward + one backward)",
        ["case", "minimal replay ms", "record ms (no Jacobians, no spectra)", "ratio (target <= 2)",
         "W_hh spectra ms (when asked)", "ratio with spectra (every record before issue 10)",
         "record ms with Jacobians", "Jacobians' share"], rows)
    growth = [growth_row(T, repeats, budget) for T in (GROWTH_SEQ_LENS[:2] if quick else GROWTH_SEQ_LENS)]
    arch, H, layers = GROWTH_CASE
    scaling = table(
        f"Jacobian norms as T grows ({arch} H={H} L={layers}, one sample): should be linear in T",
        ["T", "jacobian_norms ms", "us per step", "of which spectral norms ms", "spectral norms us per step"], growth)
    return costs + "\n" + scaling


if __name__ == "__main__":
    run_alone(run, "T=100, one layer only; fewer repeats")
