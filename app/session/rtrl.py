"""BPTT and RTRL side by side (issue 16): one small RNN or GRU and one sample, its gradient by
real-time recurrent learning (engine.rtrl) and by autograd's backpropagation through time, the
online gradient after every step, truncated BPTT's bias, and what each costs, measured. No Streamlit here.

The page's own model (Settings: cell, task, H, T, Adam steps before looking) is built from seed
SEED, trained with its task's preset training settings (Build & Train's), and looked at on one
sample of batch 1, as an online learner reads one stream. What each costs is measured as
benchmarks/rtrl.py measures it (section 10 of benchmarks/README.md), on a grid around the settings.
"""
from __future__ import annotations

import dataclasses
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property

import numpy as np
import pandas as pd
import torch

import engine
from app.session.budget import check_cost
from app.session.link import Setup
from app.session.memory import one_step
from engine.rtrl import rtrl_gradients, rtrl_online, truncated_gradients

CELLS = {"rnn": "tanh RNN", "gru": "GRU"}
TASKS = {"sine": "sine forecast (a loss at every step)", "adding": "adding problem (one loss, after the last step)"}
HIDDEN_SIZES = (2, 4, 8, 16, 32, 64, 128)
LENGTHS = (5, 10, 20, 50, 100, 200)  # at 500 a GRU's truncation sweep and cost grid took 20 s under load
TRAINING_STEPS = (0, 100, 300)
SEED = 0  # the weights' seed, the training batches' and the sample's
W_HH = "rnn.weight_hh_l0"
# The course's names of the parameters engine.rtrl follows (nn.RNN's and nn.GRU's, and the head's).
SYMBOLS = {"rnn.weight_ih_l0": "W_ih", W_HH: "W_hh", "rnn.bias_ih_l0": "b_ih", "rnn.bias_hh_l0": "b_hh",
           "head.weight": "W_o", "head.bias": "b_o"}
# RTRL's W_hh S_{t-1} on one sample, in multiply-adds (rows x H x P a step, T steps). 5.3e8 took 0.15 s
# on this 2-core CPU (a GRU, H 32, T 50); the cost table measures a grid of about two such passes,
# four times each: a few seconds at the budget's edge.
MAX_RTRL_MACS = 1e9
# Training before looking, batch x T x rows x H multiply-adds a step, times the steps: 2e9 is about two
# seconds here (a tanh RNN at H 32, T 100, batch 32, 50 steps took 0.18 s for 1.6e8).
MAX_TRAINING_MACS = 2e9
# ... and steps x T, the time steps the written-out loop runs: at small H each costs a fixed 90 µs (tanh
# RNN) to 410 µs (GRU) under a load of 8 on this CPU, so 20,000 is 2 to 8 s.
MAX_TRAINING_TIME_STEPS = 20_000
TIMING_REPEATS, TIMING_BUDGET = 3, 0.02  # medians of 3 interleaved repeats of about 20 ms each


@dataclasses.dataclass(frozen=True)
class Settings:
    """The page's model and sample: a cell of H units on a task of T steps, trained a few steps or not."""

    arch: str = "rnn"
    task: str = "sine"
    hidden_size: int = 16
    seq_len: int = 50
    trained_steps: int = 0

    def config(self, hidden_size: int | None = None) -> engine.ModelConfig:
        return engine.ModelConfig(arch=self.arch, hidden_size=hidden_size or self.hidden_size)

    def make_task(self, seq_len: int | None = None) -> engine.Task:
        return engine.make_task(self.task, seq_len=seq_len or self.seq_len)


def rows(arch: str, H: int) -> int:
    """Rows of W_hh: H for an RNN, 3H (r, z, n) for a GRU."""
    return 3 * H if arch == "gru" else H


def recurrent_parameters(arch: str, H: int, D: int) -> int:
    """P, the columns of the sensitivity S_t: W_ih, W_hh, b_ih and b_hh."""
    return rows(arch, H) * (D + H + 2)


def rtrl_macs(arch: str, H: int, D: int, T: int) -> int:
    """RTRL's multiply-adds on one sample: W_hh S_{t-1}, rows x H x P a step (the H^4 term), T steps."""
    return rows(arch, H) * H * recurrent_parameters(arch, H, D) * T


def training_macs(settings: Settings, batch: int) -> int:
    return settings.trained_steps * batch * settings.seq_len * rows(settings.arch, settings.hidden_size) * (
        settings.hidden_size)


def check_budget(settings: Settings, task: engine.Task) -> None:
    """ValueError, saying what to lower, when the network is over the app's one gate (budget.check_cost,
    as every model a page builds), or RTRL on one sample or the training before it would take longer
    than a page of a CPU a class shares may (RTRL's own H⁴ cost, which no other page pays)."""
    check_cost(Setup(settings.task, settings.config(), task.preset.train, {"seq_len": settings.seq_len}), task)
    arch, H, T, D = settings.arch, settings.hidden_size, settings.seq_len, task.spec.input_size
    macs = rtrl_macs(arch, H, D, T)
    if macs > MAX_RTRL_MACS:
        fits_T = [t for t in LENGTHS if rtrl_macs(arch, H, D, t) <= MAX_RTRL_MACS]
        fits_H = [h for h in HIDDEN_SIZES if rtrl_macs(arch, h, D, T) <= MAX_RTRL_MACS]
        lower = " or ".join(([f"T to {fits_T[-1]}"] if fits_T else []) + ([f"H to {fits_H[-1]}"] if fits_H else []))
        raise ValueError(
            f"RTRL on one sample of {T} steps with H = {H} would take {macs:.1e} multiply-adds (W_hh S_(t−1) is "
            f"{rows(arch, H)} x {H} x {recurrent_parameters(arch, H, D):,} at every step, P = "
            f"{recurrent_parameters(arch, H, D):,} recurrent parameters), over this page's budget of "
            f"{MAX_RTRL_MACS:.0e} for a CPU a class shares. That is RTRL's H⁴ at work: lower {lower}")
    batch, steps = task.preset.train.batch_size, settings.trained_steps
    if training_macs(settings, batch) > MAX_TRAINING_MACS or steps * T > MAX_TRAINING_TIME_STEPS:
        raise ValueError(
            f"training {steps} steps of batch {batch} on {T} steps with H = {H} first would take "
            f"{training_macs(settings, batch):.1e} multiply-adds over {steps * T:,} time steps, over this page's "
            f"budget of {MAX_TRAINING_MACS:.0e} and {MAX_TRAINING_TIME_STEPS:,} for a CPU a class shares; look at "
            "it untrained or after fewer steps, or lower T or H")


class SideBySide:
    """The settings' model and sample, and what the page shows of them: RTRL's gradient beside
    autograd's, RTRL's online gradient after every step, and truncated BPTT's bias. Each is
    computed when first asked for and kept: moving the page's step t recomputes only bptt_so_far."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.task = settings.make_task()
        check_budget(settings, self.task)
        self.model = engine.build_model(settings.config(), self.task, seed=SEED)
        if settings.trained_steps:
            train = dataclasses.replace(self.task.preset.train, seed=SEED)
            with one_step():  # its few steps in one turn
                engine.Trainer(self.model, self.task, train).step(settings.trained_steps)
        self.x, self.y = self.task.batch(1, torch.Generator().manual_seed(SEED))  # one sample: [1, T, D], its y
        self.names = [name for name, _ in self.model.named_parameters()]

    @cached_property
    def bptt(self) -> dict[str, torch.Tensor]:
        """autograd's gradient of the task's loss through the engine's forward pass (PyTorch's kernel)."""
        return autograd_gradients(self.model, self.task.loss(self.model(self.x), self.y))

    @cached_property
    def online(self) -> tuple[pd.DataFrame, torch.Tensor]:
        """RTRL step by step: a frame (t from 1, loss so far, ‖∂L_≤t/∂W_hh‖, sensitivity bytes) and
        ∂L_≤t/∂W_hh of every step, [T, rows, H] (kept for the page, which RTRL itself does not need)."""
        found, w_hh = [], []
        for step in rtrl_online(self.model, self.x, self.y):
            grad = step.grads[W_HH]  # [rows, H]
            w_hh.append(grad)
            found.append({"t": step.t + 1, "loss": step.loss, "norm": grad.norm().item(),
                          "sensitivity_bytes": step.sensitivity.nbytes})
        return pd.DataFrame(found), torch.stack(w_hh)  # [T, rows, H]

    @cached_property
    def rtrl(self) -> dict[str, torch.Tensor]:
        """RTRL's gradient of the whole loss: its last online step's."""
        *_, last = rtrl_online(self.model, self.x, self.y)
        return last.grads

    @cached_property
    def double(self) -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
        """The model and sample in float64, where rounding is 1e-16 and a bias of 1e-12 still shows."""
        model = engine.build_model(self.settings.config(), self.task, seed=SEED)
        model.load_state_dict(self.model.state_dict())
        y = self.y.double() if self.y.is_floating_point() else self.y
        return model.double(), self.x.double(), y

    def entries(self) -> pd.DataFrame:
        """Every entry of every parameter's gradient: parameter (its symbol), bptt, rtrl (float32, as the model
        trains)."""
        return pd.concat([pd.DataFrame({"parameter": SYMBOLS[name], "bptt": self.bptt[name].flatten().numpy(),
                                        "rtrl": self.rtrl[name].flatten().numpy()}) for name in self.names],
                         ignore_index=True)

    @cached_property
    def agreement(self) -> pd.DataFrame:
        """Per parameter: its shape, entries, largest |∂L/∂θ| and largest |RTRL − BPTT| in float32
        and in float64."""
        model, x, y = self.double
        bptt64 = autograd_gradients(model, self.task.loss(model(x), y))
        *_, last = rtrl_online(model, x, y)
        return pd.DataFrame([{
            "parameter": SYMBOLS[name], "in PyTorch": name, "shape": " x ".join(map(str, self.bptt[name].shape)),
            "entries": self.bptt[name].numel(),
            "largest |gradient|": self.bptt[name].abs().max().item(),
            "float32": (self.rtrl[name] - self.bptt[name]).abs().max().item(),
            "float64": (last.grads[name] - bptt64[name]).abs().max().item(),
        } for name in self.names])

    def bptt_so_far(self, t: int) -> tuple[torch.Tensor, int]:
        """(∂L_≤t/∂W_hh by autograd through the first t steps, the bytes autograd kept to get it): what
        BPTT needs to have RTRL's gradient after step t (t from 1), the loss terms ℓ_1..ℓ_t."""
        return bptt_prefix(self.model, self.task, self.x, self.y, t)

    @cached_property
    def truncation(self) -> pd.DataFrame:
        """Truncated BPTT's ∂L/∂W_hh against the exact one (RTRL's, in float64) for windows k up to T:
        window, relative error ‖g_k − g‖ / ‖g‖, cosine."""
        model, x, y = self.double
        *_, last = rtrl_online(model, x, y)
        exact = last.grads[W_HH].flatten()  # [rows * H]
        found = []
        for k in windows(self.settings.seq_len):
            cut = truncated_gradients(model, x, y, k)[W_HH].flatten()  # [rows * H]
            error = ((cut - exact).norm() / exact.norm()).item() if exact.norm() > 0 else 0.0
            cosine = torch.nn.functional.cosine_similarity(cut, exact, dim=0).item()
            found.append({"window": k, "relative_error": error, "cosine": cosine})
        return pd.DataFrame(found)


def windows(T: int, most: int = 15) -> list[int]:
    """Every window from 1 to T when there are at most `most`, else about `most` spread evenly on a
    log scale; T (full BPTT) always."""
    if T <= most:
        return list(range(1, T + 1))
    return sorted({int(k) for k in np.unique(np.round(np.geomspace(1, T, most)))} | {T})


def autograd_gradients(model: torch.nn.Module, loss: torch.Tensor) -> dict[str, torch.Tensor]:
    named = dict(model.named_parameters())
    return dict(zip(named, torch.autograd.grad(loss, list(named.values()))))


def bptt_prefix(model, task: engine.Task, x: torch.Tensor, y: torch.Tensor, t: int) -> tuple[torch.Tensor, int]:
    """autograd's ∂(ℓ_1 + ... + ℓ_t)/∂W_hh through the model's forward pass over x_1..x_t alone, and
    the bytes autograd saved for it. The loss terms are RTRL's (engine.rtrl.step_targets): a seq2seq
    task's ℓ_s is loss(ŷ_s, y_s) / T, a seq2vec task has only ℓ_T, so before T there is nothing to
    differentiate and BPTT keeps nothing."""
    T = x.shape[1]
    if task.spec.mapping == "seq2vec" and t < T:
        return torch.zeros_like(model.rnn.weight_hh_l0), 0
    with saved_bytes() as saved:
        y_hat = model(x[:, :t])  # [1, t, out] (seq2vec: [1, out], at t = T)
        loss = task.loss(y_hat, y) if task.spec.mapping == "seq2vec" else task.loss(y_hat, y[:, :t]) * t / T
    (grad,) = torch.autograd.grad(loss, [model.rnn.weight_hh_l0])
    own = {p.untyped_storage().data_ptr() for p in (*model.parameters(), x)}
    return grad, sum(size for pointer, size in saved.items() if pointer not in own)


@contextmanager
def saved_bytes() -> Iterator[dict[int, int]]:
    """Within it, every tensor autograd saves for the backward pass is counted, each storage once:
    {storage pointer: bytes} (benchmarks/rtrl.py's count)."""
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        yield saved


# ------------------------------------------------------------------ what each costs, measured


def cost_grid(settings: Settings) -> list[tuple[str, int, int]]:
    """(sweep, H, T) of the grid measured for these settings: H doubling from 2 up to theirs at their
    T, and T halving down from theirs (to T/8, at least 2 steps) at their H. Their own (H, T), in
    both sweeps, is the sweep "both", measured once."""
    H, T = settings.hidden_size, settings.seq_len
    hs = [h for h in HIDDEN_SIZES if h < H]
    ts = sorted({max(2, T // d) for d in (8, 4, 2)} - {T})
    return [("H", h, T) for h in hs] + [("T", H, t) for t in ts] + [("both", H, T)]


def interleaved(fns: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median seconds per call of each fn, taking turns in every repeat, each measurement about
    TIMING_BUDGET long (benchmarks/timing.py's method: a burst of load from elsewhere slows both)."""
    def seconds(fn, calls: int) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls

    calls = {name: max(1, min(1000, round(TIMING_BUDGET / max(seconds(fn, 1), 1e-6)))) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(TIMING_REPEATS):
        for name, fn in fns.items():
            samples[name].append(seconds(fn, calls[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def measure_point(settings: Settings, sweep: str, H: int, T: int) -> dict:
    """One point of the grid: a fresh model of the settings' cell with H units on T steps of their
    task, batch 1. RTRL: engine.rtrl's whole pass; BPTT: forward on PyTorch's kernel and autograd's
    backward. Memory: RTRL's S_t and the bytes autograd saves for BPTT (weights and input left out)."""
    task = settings.make_task(T)
    model = engine.build_model(settings.config(H), task, seed=SEED)
    x, y = task.batch(1, torch.Generator().manual_seed(SEED))

    def bptt() -> None:
        torch.autograd.grad(task.loss(model(x), y), list(model.parameters()))

    times = interleaved({"rtrl": lambda: rtrl_gradients(model, x, y), "bptt": bptt})
    _, saved = bptt_prefix(model, task, x, y, T)
    first = next(iter(rtrl_online(model, x, y)))
    return {"sweep": sweep, "H": H, "T": T, "P": recurrent_parameters(settings.arch, H, task.spec.input_size),
            "rtrl_ms": 1e3 * times["rtrl"] / T, "bptt_ms": 1e3 * times["bptt"] / T,
            "rtrl_kb": first.sensitivity.nbytes / 1024, "bptt_kb": saved / 1024}


def measure_cost(settings: Settings) -> tuple[pd.DataFrame, str]:
    """The grid's measurements (one row a point, columns as measure_point's) and when and under what
    load they were taken: the machine is shared, so the times are read as growth, not as milliseconds."""
    before = os.getloadavg()[0]
    start = time.perf_counter()
    frame = pd.DataFrame([measure_point(settings, *point) for point in cost_grid(settings)])
    took, after = time.perf_counter() - start, os.getloadavg()[0]
    when = time.strftime("%H:%M:%S UTC", time.gmtime())
    return frame, (f"measured at {when} in {took:.1f} s, {torch.get_num_threads()} torch thread, load average "
                   f"{before:.1f} before and {after:.1f} after on {os.cpu_count()} cores")


def growth(frame: pd.DataFrame, column: str, by: str) -> list[float | None]:
    """The exponent k of column ∝ by^k between each row and the one before (None for the first)."""
    values, sizes = frame[column].to_numpy(float), frame[by].to_numpy(float)
    return [None] + [float(np.log(b / a) / np.log(d / c)) for a, b, c, d in
                     zip(values, values[1:], sizes, sizes[1:])]
