"""Recording cost: engine.record on one sample against the least a replay can cost (the written-out
forward over the sample and one backward, nothing kept), and what the Jacobian norms add as T grows.

    PYTHONPATH=. python benchmarks/record_cost.py [--quick]
"""
from __future__ import annotations

import itertools
import statistics
import time
from functools import partial

import torch
from timing import interleaved, run_alone, table

import engine
from engine.losses import compute_loss
from engine.record import jacobian_norms, opened
from engine.recurrent import replay_stack
from engine.replay import Taps

SEQ_LENS, HIDDENS, ARCHS, LAYERS = (100, 500), (64, 128), ("lstm", "gru"), (1, 2)
GROWTH_SEQ_LENS = (100, 200, 400, 800, 2000)  # Jacobian norms should cost about the same per step
GROWTH_CASE = ("lstm", 64, 1)
# The initialised LSTM's J_t underflow to exactly 0 a few hundred steps before T (a zero matrix's
# norm is cheaper to take); with its forget gates' bias raised by 3, every J_t of T=2000 stays a normal float.
FORGET_BIASES = (0.0, 3.0)


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


def cpu_seconds(fns: dict, repeats: int) -> dict:
    """Median CPU seconds (time.process_time) of one call of each fn, the fns taking turns. Wall time
    would also count the time other work on this shared 2-core machine held the core: it scattered
    T=200's cost per step from 1.4x to 1.7x T=100's, where CPU time gives 0.99x-1.03x."""
    samples = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.process_time()
            fn()
            samples[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def growth_rows(forget_bias: float, seq_lens, repeats: int) -> list[list]:
    """jacobian_norms alone on one replayed sample of each length, and spectral norms of random
    matrices of the size of its J_t. All lengths take turns in every repeat (the first call of each
    is the J_t-at-0 count), so the cost per step of each against the first is measured alike."""
    arch, H, layers = GROWTH_CASE
    fns, zeros = {}, {}
    for T in seq_lens:
        model, x, y = sample_model(arch, T, H, layers)
        with torch.no_grad():
            model.rnn.bias_hh_l0[H : 2 * H] += forget_bias  # nn.LSTM's gates: i, f, g, o
        with opened(model):
            stack = model.replay(x[:1], y[:1], Taps()).stacks["rnn"]
        zeros[T] = int((jacobian_norms(stack) == 0).sum())
        jacobians = torch.randn(T, H, H)  # [T, H, H]: the size of J_t for every t
        fns[T] = partial(jacobian_norms, stack)
        fns[f"norms {T}"] = partial(torch.linalg.matrix_norm, jacobians, ord=2)
    times = {k: v * 1e3 for k, v in cpu_seconds(fns, repeats).items()}  # ms
    first = times[seq_lens[0]] / seq_lens[0]
    return [[T, forget_bias, zeros[T], times[T], times[T] / T * 1e3, times[T] / T / first,
             times[f"norms {T}"] / T * 1e3] for T in seq_lens]


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
    seq_lens = (GROWTH_SEQ_LENS[0], GROWTH_SEQ_LENS[2]) if quick else GROWTH_SEQ_LENS
    growth = [row for bias in FORGET_BIASES for row in growth_rows(bias, seq_lens, repeats)]
    arch, H, layers = GROWTH_CASE
    scaling = table(
        f"Jacobian norms as T grows ({arch} H={H} L={layers}, one sample): should be linear in T",
        ["T", "forget-gate bias added", "J_t exactly 0", "jacobian_norms CPU ms", "CPU us per step",
         f"per step / T={seq_lens[0]}'s (target <= 1.2)", "spectral norms of random J_t, CPU us per step"], growth)
    return costs + "\n" + scaling


if __name__ == "__main__":
    run_alone(run, "T=100, one layer only; fewer repeats")
