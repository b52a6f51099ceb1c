"""Held-out data over training: the model's loss and metric on samples it never trains on, every
EVAL_EVERY steps, and the weights of the best step so far (early stopping, the GWU lecture's good
practice). No Streamlit here.

The training curves score each step's own batch, which a model can learn by heart: on a small
review CSV the training loss reaches 1e-7 while the held-out loss climbs past a coin toss's.
The held-out set is fixed when the model is installed, so every point of its curve scores the
same samples: the task's own test split where it has one (sentiment's held-out reviews), the
text a char LM holds out where it holds some (Tiny Shakespeare's last 10%, or an uploaded text's),
else the batch Trainer.evaluate draws from the seed's "held_out" stream (apart from the training
batches and the probe samples). It is cut to about SAMPLE_STEPS samples x time steps, so that one
evaluation (no_grad, eval mode) costs a few percent of the EVAL_EVERY training steps before it.
Measured on each task preset (one thread, fastest of 25, the 2-core machine shared): samples
scored, ms per evaluation, and its share of 25 training steps' time:
    adding 204, 2.3 ms, 2.8%     recall 200, 2.4 ms, 2.7%    parity 512, 1.2 ms, 3.3%
    sine 170, 1.0 ms, 3.0%       charlm 102, 16 ms, 4.0%     sentiment 256 of 390, 4.8 ms, 8.0%
    reverse 512 (decoding freely), 4.0 ms, 6.9%
Keeping the best step's weights (a state_dict clone when the held-out loss improves) takes
0.01-0.03 ms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import torch

import engine
from app.session.rows import BoundedRows
from engine.rng import stream
from engine.training import scored

EVAL_EVERY = 25  # steps between evaluations (the gradient log's interval), and one at step 0
SAMPLE_STEPS = 10_240  # samples x time steps evaluated: 3-9% of the 25 training steps before (presets)
MAX_SAMPLES, MIN_SAMPLES = 512, 32
OUTPUT_WIDTH = 2_048  # outputs (classes, words) a step's cost is counted by SAMPLE_STEPS for: wider ones cost more


def steps_per_sample(x: torch.Tensor, y: torch.Tensor) -> int:
    """Time steps one sample runs: the longer of its input and its target sequence (tokens
    [B, T], values [B, T, F]; a vector [B, F] or a class [B] is one step)."""
    def length(t: torch.Tensor) -> int:
        return t.shape[1] if t.dim() == 3 or (t.dim() == 2 and not t.is_floating_point()) else 1
    return max(length(x), length(y))


def held_out_set(task: engine.Task, seed: int) -> tuple[torch.Tensor, torch.Tensor, int, bool]:
    """(x, y, n_available, from_test_split): the samples every evaluation scores, at most
    SAMPLE_STEPS / (time steps per sample) of them (at least MIN_SAMPLES, at most MAX_SAMPLES):
    - the task's test split if it has one (a test split is shuffled by the task, so its first
      samples are a fair subset);
    - a text the task holds out (a char LM on Tiny Shakespeare or on a student's own text: its last
      10%): that many distinct windows of it at random starts from the seed's "held_out" stream
      (CharLMTask.held_out_windows), out of every start it has;
    - else Trainer.evaluate's batch from the seed's "held_out" stream (apart from the training
      batches, from the same source: for the Python corpus and the reviews' text, which the task
      trains on whole, windows of the training text)."""
    if hasattr(task, "test_set"):
        x, y = task.test_set()
        n = budget(steps_per_sample(x[:1], y[:1]) * output_share(task))
        return x[:n], y[:n], len(y), True
    if getattr(task, "holds_out", False):
        x, y = task.held_out_windows(budget(task.seq_len), stream(seed, "held_out"))
        return x, y, len(task.ids) - task.train_end - task.seq_len, True  # windows it could score
    x1, y1 = task.batch(1, stream(seed, "held_out"))
    n = budget(steps_per_sample(x1, y1))
    x, y = task.batch(n, stream(seed, "held_out"))  # what trainer.evaluate(n) scores
    return x, y, n, False


def output_share(task: engine.Task) -> int:
    """How many times OUTPUT_WIDTH the output layer is: a sample costs its steps x that (1 for every preset,
    5 for the shipped translator's 11,800 French words, whose head is most of a step)."""
    return max(1, task.spec.output_size // OUTPUT_WIDTH)


def budget(steps: int) -> int:
    return int(min(MAX_SAMPLES, max(MIN_SAMPLES, SAMPLE_STEPS // max(steps, 1))))


@torch.no_grad()
def score(model: torch.nn.Module, task: engine.Task, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(loss, metric) of `model` on (x, y) in eval mode, as Trainer.evaluate scores its held-out
    data (an encoder-decoder decodes freely, a masked model's output is computed at its chosen words only:
    engine.training.scored); the model's mode is left as it was."""
    was_training = model.training
    model.eval()
    try:
        y_hat, y = scored(model, task, x, y)
    finally:
        model.train(was_training)
    return task.loss(y_hat, y).item(), task.metric(y_hat, y)


@dataclass(frozen=True)
class Best:
    """The evaluation with the lowest held-out loss so far, and the weights that scored it."""

    step: int
    loss: float
    metric: float
    weights: dict[str, torch.Tensor]  # a clone of the model's state_dict at that step


class HeldOut:
    """The held-out log of one installed model (a new model gets a new one). The caller holds
    the lab's lock for every call but frame()'s readers, which get a copy."""

    def __init__(self, trainer: engine.Trainer):
        self.trainer, self.model, self.task = trainer, trainer.model, trainer.task
        self.x, self.y, self.available, self.test_split = held_out_set(self.task, trainer.cfg.seed)
        self.log = BoundedRows()  # step, loss, metric: an evaluation every EVAL_EVERY steps, thinned when long
        self.best: Best | None = None
        self.at_best = False  # the model's weights are the best's (just measured, or restored)
        self.measure()

    @property
    def size(self) -> int:
        return len(self.y)

    def describe(self) -> str:
        """What the held-out curve scores, for a caption."""
        if self.test_split and getattr(self.task, "holds_out", False):
            tail = len(self.task.ids) - self.task.train_end
            which = "every one" if self.size == self.available else f"{self.size:,} at random starts"
            return (f"windows of {self.task.seq_len} characters in the text's last {tail:,} characters, held out "
                    f"and never trained on: {which} of the {self.available:,} it has")
        if self.test_split:
            of = f" of the task's {self.available:,}" if self.available > self.size else ""
            return f"{self.size:,}{of} held-out samples, set apart before training and never trained on"
        return (f"a fixed batch of {self.size:,} samples drawn apart from the training batches "
                "(from the same source: for a text, windows of the same text)")

    def measure(self) -> None:
        """Score the model as it is now and log it at the current step; keep its weights if its
        loss is the lowest so far."""
        loss, metric = score(self.model, self.task, self.x, self.y)
        step = self.trainer.steps_done
        self.log.append({"step": step, "loss": loss, "metric": metric})
        if math.isfinite(loss) and (self.best is None or loss < self.best.loss):
            weights = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.best = Best(step, loss, metric, weights)
            self.at_best = True

    def trained(self) -> None:
        """After each training step: the weights moved off the best; measure every EVAL_EVERY
        steps unless training diverged."""
        self.at_best = False
        if self.trainer.steps_done % EVAL_EVERY == 0 and self.trainer.diverged_at is None:
            self.measure()

    def restore(self) -> int:
        """Put the best step's weights back into the model (the step count carries on, and so does
        the optimizer unless training had diverged) and log them at the current step; returns the
        best step."""
        if self.best is None:
            raise ValueError("there is no held-out evaluation yet, so no best step to go back to")
        self.model.load_state_dict(self.best.weights)
        if self.trainer.diverged_at is not None:  # finite weights again: training can go on
            self.trainer.resume()
        self.measure()
        self.at_best = True
        return self.best.step

    def frame(self) -> pd.DataFrame:
        """step, loss, metric: one row per evaluation kept (two at a step where weights were
        restored: before and after)."""
        return pd.DataFrame(self.log.rows(), columns=["step", "loss", "metric"])
