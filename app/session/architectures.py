"""Architectures: one task, one seed, one budget, and five networks of about the same size (a tanh
RNN, an LSTM, a GRU, a bidirectional LSTM and a transformer) trained side by side, in turns, as
Compare cells trains its cells (comparison.RoundRobin). No Streamlit here.

Each network's size is found by a small search over its hidden size (a transformer's d_model) for
the parameter count nearest the student's target. Every run logs its held-out loss and accuracy,
its accuracy against how far it must carry a symbol (the task's "length": recall's lag, reversal's
output position, the char LM's context), and the wall-clock time of its training steps.

Measured on this 2-core CPU (one thread; 2026-11-23, load average 3-5 from other work) at the
defaults below: the median step of the five networks takes 2.2-6.1 ms on recall (lag 40, 5,000
parameters), 2.3-7.7 ms on reversal (8 symbols, 10,000) and 3.4-6.4 ms on the char LM (32
characters, 15,000), the transformer the slowest each time. Training all of them to the page's
budgets (600, 1,000, 800 steps) takes 25, about 22 and about 18 s alone, and 41, 53 and 56 s on
screen in chromium with the page redrawing (tests/browser, the same machine).
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

import engine
from app.session.budget import check_runs
from app.session.comparison import RoundRobin, TrainedRun
from app.session.heldout import budget, held_out_set
from app.session.link import Setup
from engine.build import build_model
from engine.config import MAX_HIDDEN, check_int
from engine.rng import stream
from engine.tasks.base import MAX_SEQ_LEN

# The networks compared: everything but their size. The LSTMs' forget gates start half open
# (bias 1, Jozefowicz et al. 2015's common choice): with PyTorch's 0, a 30-unit LSTM stayed at
# chance on recall at lag 20 for 1000 steps while the tanh RNN learned it by step 200 (measured).
ARCHITECTURES = {
    "tanh RNN": {"arch": "rnn", "activation": "tanh"},
    "LSTM": {"arch": "lstm", "forget_bias": 1.0},
    "GRU": {"arch": "gru"},
    "bidirectional LSTM": {"arch": "lstm", "forget_bias": 1.0, "bidirectional": True},
    "transformer": {"arch": "transformer", "num_layers": 2, "num_heads": 2},
}
BIDIRECTIONAL = "bidirectional LSTM"
MIN_PARAMETERS, MAX_PARAMETERS = 500, 200_000  # the target a student may ask each network to have
MAX_SIZE = MAX_HIDDEN // 2  # searched hidden sizes: a bidirectional encoder's decoder is twice as wide
SIMILAR = 0.2  # the counts found differ from the target by at most this share, at the defaults
RECALL_LAGS = (0.25, 0.5, 1, 1.5, 2, 3)  # held-out lags scored, as multiples of the lag trained on


@dataclass(frozen=True)
class TaskLab:
    """What this page runs on one task: its length parameter, the defaults that train visibly
    within about a minute for all five networks together (measured), and how its accuracy is
    read against length."""

    title: str
    length_param: str  # the task parameter the student sets: recall's "lag", else "seq_len"
    length_label: str
    length: int  # its default
    parameters: int  # the default target, parameters per network
    steps: int  # the default budget, steps per network
    causal: bool  # the answer lies ahead (the next character): a network must not read the future
    by_lag: bool  # accuracy against the lag, on held-out sets of several lags; else against position
    length_axis: str  # a line break where a half page at 1024 px cuts it


LABS = {
    "recall": TaskLab("Delayed recall", "lag", "Lag (steps between the signal and the answer)", 40, 5_000, 600,
                      causal=False, by_lag=True, length_axis="lag of held-out samples"),
    "reverse": TaskLab("Reversal (encoder-decoder)", "seq_len", "Sequence length", 8, 10_000, 1000, causal=False,
                       by_lag=False, length_axis="output position k<br>(k-th symbol from the end)"),
    "charlm": TaskLab("Character language model", "seq_len", "Window length (characters)", 32, 15_000, 800,
                      causal=True, by_lag=False, length_axis="characters of context<br>(position in the window)"),
}
TRAINING = engine.TrainConfig(optimizer="adam", lr=3e-3, batch_size=32, clip_norm=1.0)


@dataclass(frozen=True)
class Choice:
    """What the student picks: the task, its length and the parameters each network should have."""

    task: str = "recall"
    length: int = LABS["recall"].length
    parameters: int = LABS["recall"].parameters
    seed: int = 0

    def __post_init__(self) -> None:
        if self.task not in LABS:
            raise ValueError(f"this page compares on {', '.join(LABS)}; got {self.task!r}")
        check_int("parameters per network", self.parameters, MIN_PARAMETERS, MAX_PARAMETERS)

    @classmethod
    def default(cls, task: str) -> Choice:
        """The task's defaults (LABS)."""
        return cls(task, LABS[task].length, LABS[task].parameters)

    @property
    def lab(self) -> TaskLab:
        return LABS[self.task]

    @property
    def train(self) -> engine.TrainConfig:
        return engine.TrainConfig(**{**TRAINING.to_dict(), "seed": self.seed})

    def make_task(self) -> engine.Task:
        return engine.make_task(self.task, seed=self.seed, **{self.lab.length_param: self.length})


def parameter_count(cfg: engine.ModelConfig, spec: engine.TaskSpec) -> int:
    """The network's parameter count, without allocating it (the meta device)."""
    with torch.device("meta"):
        model = build_model(cfg, spec)
    return sum(p.numel() for p in model.parameters())


def sized(fields: dict, spec: engine.TaskSpec, target: int) -> engine.ModelConfig:
    """The network `fields` describe at the hidden size (a transformer's d_model, a multiple of its
    heads) whose parameter count is nearest `target`. Counts grow with the size, so a bisection
    finds the first size at or over the target; it or the one below is the nearest."""
    def config(size: int) -> engine.ModelConfig:
        return engine.ModelConfig(hidden_size=size, **fields)

    sizes = range(fields.get("num_heads", 1), MAX_SIZE + 1, fields.get("num_heads", 1))
    first_over = bisect_left(sizes, target, key=lambda size: parameter_count(config(size), spec))
    nearest = [config(size) for size in sizes[max(first_over - 1, 0): first_over + 1]]
    return min(nearest, key=lambda cfg: abs(parameter_count(cfg, spec) - target))


def compared(lab: TaskLab) -> dict[str, dict]:
    """The networks this task allows: no bidirectional LSTM where the answer lies ahead (it would
    read the next character before predicting it), and a causal transformer there; elsewhere the
    transformer sees both sides, as the bidirectional LSTM does."""
    return {name: {**fields, "bidirectional": not lab.causal} if fields["arch"] == "transformer" else fields
            for name, fields in ARCHITECTURES.items() if not (lab.causal and name == BIDIRECTIONAL)}


def sized_configs(lab: TaskLab, spec: engine.TaskSpec, target: int) -> dict[str, engine.ModelConfig]:
    return {name: sized(fields, spec, target) for name, fields in compared(lab).items()}


def chance(task: engine.Task) -> float | None:
    """The accuracy of guessing: recall's signal and reversal's symbols are drawn uniformly from
    `symbols` of them; a text's next character has no such closed form (None)."""
    return 1 / task.symbols if hasattr(task, "symbols") else None


@torch.no_grad()
def predict(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """y_hat in eval mode, as the held-out scores are taken (an encoder-decoder decodes freely)."""
    was_training = model.training
    model.eval()
    try:
        return model(x)
    finally:
        model.train(was_training)


def lag_sets(choice: Choice) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Held-out recall samples at several lags around the one trained on: lag -> (x, y), drawn as
    the held-out set is (apart from the training batches), so at the lag trained on they are it."""
    lags = sorted({max(1, round(choice.length * k)) for k in RECALL_LAGS} & set(range(1, MAX_SEQ_LEN)))
    sets = {}
    for lag in lags:
        task = engine.make_task("recall", seed=choice.seed, lag=lag)
        sets[lag] = task.batch(budget(lag + 1), stream(choice.seed, "held_out"))  # [n, lag+1, S+D], [n]
    return sets


def accuracy_by_position(y_hat: torch.Tensor, y: torch.Tensor) -> list[float]:
    """The share of samples right at each output position: y_hat [B, T, V], y [B, T] -> [T]."""
    right = (y_hat.argmax(dim=-1) == y).float()  # [B, T]
    return right.mean(dim=0).tolist()  # [T]


class ArchitectureRun(TrainedRun):
    """One network's run, its accuracy against length measured with its held-out scores:
    `by_length` is (step, {length: accuracy}) as last measured, published as one tuple."""

    def __init__(self, name: str, cfg: engine.ModelConfig, task: engine.Task, train: engine.TrainConfig,
                 held_out: tuple[torch.Tensor, torch.Tensor], lags: dict[int, tuple[torch.Tensor, torch.Tensor]]):
        self.lags = lags  # empty: accuracy by position on the held-out set
        super().__init__(name, cfg, task, train, held_out)

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def measure(self) -> None:
        task, (x, y) = self.trainer.task, self.held_out
        y_hat = predict(self.model, x)  # [B, out] or [B, T, out]
        self.log.append({"run": self.name, "step": self.steps_done, "loss": task.loss(y_hat, y).item(),
                         "metric": task.metric(y_hat, y)})
        self.by_length = (self.steps_done, self.accuracy_by_length(y_hat, y))

    def accuracy_by_length(self, y_hat: torch.Tensor, y: torch.Tensor) -> dict[int, float]:
        """Recall: lag -> accuracy on that lag's held-out samples. Else position (from 1) ->
        accuracy there on the held-out set; a reversal's end marker, the last position, left out."""
        if self.lags:
            return {lag: self.trainer.task.metric(predict(self.model, xl), yl) for lag, (xl, yl) in self.lags.items()}
        accuracy = accuracy_by_position(y_hat, y)  # [T]
        if self.trainer.task.spec.mapping == "encdec":
            accuracy = accuracy[:-1]
        return {t + 1: value for t, value in enumerate(accuracy)}


class Architectures(RoundRobin):
    """The runs of every network the chosen task allows, trained in turns. ValueError (saying what
    to change) for a choice the task refuses, or one whose networks are over the size budget."""

    def __init__(self, choice: Choice):
        super().__init__()
        self.choice = choice
        self.task = choice.make_task()
        self.configs = sized_configs(choice.lab, self.task.spec, choice.parameters)
        check_runs({name: Setup(choice.task, cfg, choice.train, {choice.lab.length_param: choice.length})
                    for name, cfg in self.configs.items()}, self.task)
        self.build()

    def build(self) -> None:
        """Fresh runs from the seed, on one task (it only hands out batches from each trainer's
        own generator) and the same held-out samples."""
        seed = self.choice.seed
        self.held_out = held_out_set(self.task, seed)[:2]
        self.lags = lag_sets(self.choice) if self.choice.lab.by_lag else {}
        self.runs = [ArchitectureRun(name, cfg, self.task, self.choice.train, self.held_out, self.lags)
                     for name, cfg in self.configs.items()]
        self.seconds = 0.0  # spent training them, measurements included

    def sizes_frame(self) -> pd.DataFrame:
        """run, network (its shape in words), parameters (counted on the model), off (share off the target)."""
        target, encdec = self.choice.parameters, self.task.spec.mapping == "encdec"
        return pd.DataFrame([{"run": run.name, "network": shape(run.cfg, encdec), "parameters": run.parameters,
                              "off": run.parameters / target - 1} for run in self.runs])

    def by_length_frame(self) -> pd.DataFrame:
        """run, step, length, accuracy: each run's accuracy against length as last measured."""
        rows = []
        for run in self.runs:
            step, accuracy = run.by_length  # one read: a step and its accuracies
            rows += [{"run": run.name, "step": step, "length": n, "accuracy": a} for n, a in accuracy.items()]
        return pd.DataFrame(rows)

    def timing_frame(self) -> pd.DataFrame:
        """run, ms (median per training step), low and high (its quartiles), steps (how many timed:
        the latest, at most TIMED_STEPS); NaN before a run's first step."""
        rows = []
        for run in self.runs:
            ms = 1000 * np.array(run.step_seconds)  # [steps timed]
            quartiles = np.percentile(ms, [50, 25, 75]) if len(ms) else [np.nan] * 3
            rows.append({"run": run.name, "ms": quartiles[0], "low": quartiles[1], "high": quartiles[2],
                         "steps": len(ms)})
        return pd.DataFrame(rows)


def shape(cfg: engine.ModelConfig, encdec: bool) -> str:
    """A network's shape in a few words: "64 units", "2 × 20 units", "2 causal blocks, d_model 18,
    2 heads"; an encoder-decoder's say so (its encoder and decoder each that size)."""
    if cfg.arch == "transformer":
        kind = "encoder-decoder" if encdec else "encoder" if cfg.bidirectional else "causal"
        return f"{kind}, {cfg.num_layers} blocks{' each' * encdec}, d_model {cfg.hidden_size}, {cfg.num_heads} heads"
    if not encdec:
        return f"2 × {cfg.hidden_size} units" if cfg.bidirectional else f"{cfg.hidden_size} units"
    if cfg.bidirectional:  # the decoder starts from both directions' final states, side by side
        return f"encoder 2 × {cfg.hidden_size} units, decoder {2 * cfg.hidden_size}"
    return f"encoder and decoder, {cfg.hidden_size} units each"


def choice_text(choice: Choice) -> str:
    """The choice a comparison runs on, in one line."""
    lab, train = choice.lab, choice.train
    return (f"{lab.title}, {lab.length_param} {choice.length} · about {choice.parameters:,} parameters a network · "
            f"{train.optimizer} lr {train.lr:g}, batch {train.batch_size}, clip norm {train.clip_norm:g} · "
            f"seed {choice.seed}")
