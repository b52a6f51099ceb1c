"""Trainer: advances a model on its task a few steps at a time, so a page can play, pause and step.

Exploding gradients are a lesson, not a crash: a step whose loss or gradient is NaN/Inf, or whose
update would make a weight non-finite, is not applied; training stops with "diverged at step N"
and the model keeps its last finite weights.
"""
from __future__ import annotations

import math
from contextlib import nullcontext

import pandas as pd
import torch
from torch import Tensor, nn
from torch.nn.utils import get_total_norm

from .arguments import check_kind, check_model, check_task
from .config import check_int
from .history import MAX_ROWS, ROW_LIMITS, History, StepStats
from .rng import PrivateRNG, stream, stream_seed
from .tasks.base import DECODERS, Task
from .train_config import TrainConfig
from .truncated import check_truncation, chunk_loss, chunks, detach_state
from .vocab import check_vocab


def make_optimizer(cfg: TrainConfig, params) -> torch.optim.Optimizer:
    """params: parameters, or param groups (dicts), each of which may set its own "lr"."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr)
    if cfg.optimizer == "momentum":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=0.9)
    if cfg.optimizer == "rmsprop":
        return torch.optim.RMSprop(params, lr=cfg.lr)
    return torch.optim.Adam(params, lr=cfg.lr)


def global_norm(params: list[nn.Parameter]) -> float:
    """The L2 norm of all gradients together, as clip_grad_norm_ measures it."""
    grads = [p.grad for p in params if p.grad is not None]
    return get_total_norm(grads).item() if grads else 0.0


def part_groups(model: nn.Module, lr: float, scales: dict[str, float]) -> list[dict]:
    """One optimizer param group per part of the model (its param_groups), each at lr times the
    part's scale (1 unless named): transfer learning's lower learning rate for the layers it
    unfreezes. A parameter in no part trains at lr."""
    named = dict(model.named_parameters())
    groups = [{"params": [named.pop(n) for n in names], "lr": lr * scales.get(part, 1.0), "part": part}
              for part, names in model.param_groups().items()]
    if named:
        groups.append({"params": list(named.values()), "lr": lr, "part": None})
    return groups


def check_settings(cfg) -> None:
    check_kind("cfg", cfg, TrainConfig, "an engine.TrainConfig, e.g. engine.TrainConfig(lr=1e-3)")


def check_fits(model: nn.Module, task: Task, cfg: TrainConfig) -> None:
    """ValueError unless this model, task and training config can train together."""
    check_truncation(model.cfg, task.spec.mapping, cfg.bptt_window)
    if cfg.scheduled_sampling and task.spec.mapping not in DECODERS:
        raise ValueError(
            f"scheduled sampling feeds a decoder its own predictions; a {task.spec.mapping} task has no "
            "decoder, so set scheduled_sampling=0"
        )



def scored(model: nn.Module, task: Task, x: Tensor, y: Tensor, teacher_forced: bool = False) -> tuple[Tensor, Tensor]:
    """(y_hat, the targets it is scored against) for a batch: the model's output at every position and y,
    or, for a task that scores a few positions (Task.scores_targets_only) and a model that can compute
    those alone, its output at them and their targets (the same loss and accuracy, for a fraction of the
    output layer's work). `teacher_forced`: the model reads y (training); else an encoder-decoder decodes
    freely (held-out scoring), reading its own outputs, which needs every one of them."""
    frees_itself = task.decodes and not teacher_forced
    if task.scores_targets_only and hasattr(model, "at_targets") and not frees_itself:
        return model.at_targets(x, y)
    return (model(x, y) if teacher_forced else model(x)), y

class Trainer:
    """history_rows: the most rows `history` keeps (see engine.history.History)."""

    def __init__(self, model: nn.Module, task: Task, cfg: TrainConfig, history_rows: int = MAX_ROWS):
        check_model(model)
        check_task(task)
        check_settings(cfg)
        task.check_batch(cfg.batch_size)  # a batch too big to draw is refused now, not at the first step
        check_fits(model, task, cfg)
        if model.spec != task.spec:
            raise ValueError(
                f"this model was built for a {model.spec.name} task shaped {model.spec}, not for "
                f"this {task.spec.name} task; build the model for this task with engine.build_model"
            )
        check_vocab(model, task)
        check_int("history_rows", history_rows, *ROW_LIMITS)
        self.model, self.task, self.cfg = model, task, cfg
        self.params = list(model.parameters())
        self.lr_scales: dict[str, float] = {}  # part -> its learning rate as a share of cfg.lr
        self.optimizer = self.new_optimizer(cfg)
        self.seed_streams(cfg.seed)
        self.history = History(history_rows)  # bounded: the latest steps all, older ones sampled
        self.diverged_at: int | None = None

    def resume(self) -> None:
        """Train on after a divergence, once the caller has put finite weights back (a student going
        back to the best step): the divergence is forgotten, and the optimizer starts afresh,
        since its moments hold the step that overflowed. ValueError while a weight is not finite."""
        bad = [name for name, p in self.model.named_parameters() if not bool(torch.isfinite(p).all())]
        if bad:
            raise ValueError(f"{bad[0]} is not finite; put finite weights back before resuming")
        self.diverged_at = None
        self.optimizer = self.new_optimizer(self.cfg)

    def retune(self, cfg: TrainConfig) -> None:
        """Train on with new settings, from the weights as they are (a student turning the
        learning rate down mid-run). The same optimizer keeps its state (Adam's moments); another
        optimizer starts afresh. A new seed changes the batches and dropout from here on."""
        check_settings(cfg)
        self.task.check_batch(cfg.batch_size)
        check_fits(self.model, self.task, cfg)
        if cfg.optimizer == self.cfg.optimizer:
            self.set_lrs(cfg.lr)
        else:
            self.optimizer = self.new_optimizer(cfg)
        if cfg.seed != self.cfg.seed:
            self.seed_streams(cfg.seed)
        self.cfg = cfg

    def new_optimizer(self, cfg: TrainConfig) -> torch.optim.Optimizer:
        return make_optimizer(cfg, part_groups(self.model, cfg.lr, self.lr_scales))

    def scale_lr(self, scales: dict[str, float]) -> None:
        """Train each named part at cfg.lr times its scale from the next step (e.g. {"layer 0": 0.1}:
        a layer unfrozen at a tenth of the rate); parts not named go back to cfg.lr. The optimizer
        keeps its state."""
        groups = self.model.param_groups()
        for part, scale in scales.items():
            if part not in groups:
                raise ValueError(f"no part named {part!r}; this model has {', '.join(groups)}")
            if not (isinstance(scale, (int, float)) and 0 < scale <= 10):
                raise ValueError(f"the learning-rate scale of {part} is {scale!r}; give a number in (0, 10]")
        self.lr_scales = dict(scales)
        self.set_lrs(self.cfg.lr)

    def set_lrs(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr * self.lr_scales.get(group["part"], 1.0)

    def seed_streams(self, seed: int) -> None:
        """Batches, scheduled sampling's coins and dropout each draw from their own stream."""
        self.batches = stream(seed, "batches")
        self.coins = stream(seed, "coins")
        # Dropout and zoneout's masks can only draw from torch's global generator, shared by every session.
        cfg = self.model.cfg
        self.dropout_rng = PrivateRNG(stream_seed(seed, "dropout")) if cfg.dropout > 0 or cfg.zoneout > 0 else None

    @property
    def steps_done(self) -> int:
        """Steps applied or tried, all of them (the history keeps a sample of the older ones)."""
        return self.history.total

    @property
    def last(self) -> StepStats | None:
        """The latest step's stats, or None before the first."""
        return self.history.last

    @property
    def status(self) -> str:
        if self.diverged_at is not None:
            return f"diverged at step {self.diverged_at}"
        return f"trained {self.steps_done} steps"

    def step(self, n: int = 1) -> list[StepStats]:
        """Run up to n training steps; stops early (and for good: start a new Trainer) if
        training diverges."""
        check_int("n", n, 0, 1_000_000)
        done = []
        with self.dropout_rng.active() if self.dropout_rng else nullcontext():
            for _ in range(n):
                if self.diverged_at is not None:
                    break
                x, y = self.task.cut(*self.task.batch(self.cfg.batch_size, self.batches))
                stats = self.train_step(x, y)
                self.history.add(stats)
                done.append(stats)
                if stats.diverged:
                    self.diverged_at = stats.step
        return done

    def train_step(self, x: Tensor, y: Tensor) -> StepStats:
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss, y_hat, y = self.forward_backward(x, y)
        step = self.steps_done + 1
        grad_norm = global_norm(self.params)
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            return StepStats(step, loss, float("nan"), grad_norm, float("nan"), diverged=True)
        if self.cfg.clip_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.cfg.clip_norm)
        if self.cfg.clip_value is not None:
            torch.nn.utils.clip_grad_value_(self.params, self.cfg.clip_value)
        clipped = self.cfg.clip_norm is not None or self.cfg.clip_value is not None
        grad_norm_clipped = global_norm(self.params) if clipped else grad_norm
        before = [p.detach().clone() for p in self.params]
        self.optimizer.step()
        if not math.isfinite(get_total_norm(self.params).item()):  # the update overflowed
            with torch.no_grad():
                for p, old in zip(self.params, before):
                    p.copy_(old)
            return StepStats(step, loss, float("nan"), grad_norm, grad_norm_clipped, diverged=True)
        metric = self.task.metric(y_hat.detach(), y)
        return StepStats(step, loss, metric, grad_norm, grad_norm_clipped, diverged=False)

    def sampled(self, y: Tensor) -> Tensor:
        """Scheduled sampling's coin flips: True where the decoder reads its own prediction. [B, T_out]."""
        return torch.rand(y.shape, generator=self.coins) < self.cfg.scheduled_sampling

    def forward_backward(self, x: Tensor, y: Tensor) -> tuple[float, Tensor, Tensor]:
        """Loss and gradients for one batch, with full or truncated BPTT. Returns (loss, y_hat, the targets
        y_hat is scored against: y, or its positions with a target (scored))."""
        model, window = self.model, self.cfg.bptt_window
        T = x.shape[1] if x.dim() > 1 else 0
        if not window or window >= T:
            if self.cfg.scheduled_sampling:
                y_hat = model(x, y, sampled=self.sampled(y))
            else:
                y_hat, y = scored(model, self.task, x, y, teacher_forced=True)
            loss = self.task.loss(y_hat, y)
            loss.backward()
            return loss.item(), y_hat, y
        # Truncated BPTT: the state crosses chunk borders detached, so no gradient flows back
        # further than `window` steps. Each chunk's inputs are made inside the chunk so that each
        # backward pass frees only its own graph.
        aligned = model.spec.mapping == "seq2seq"
        state, outputs, total = None, [], 0.0
        for chunk in chunks(T, window):
            padded = model.spec.padded(x[:, chunk])  # [B, k] or None: pads carry the state, as in the replay
            out, state = model.features(model.inputs(x[:, chunk]), state, padded)  # [B, k, dirs*H]
            term = chunk_loss(model, self.task.loss, out, y, chunk, T)  # None before a seq2vec task's target
            if term is not None:
                loss, y_hat = term
                loss.backward()
                total += loss.item()
                outputs.append(y_hat.detach())
            state = detach_state(state)
        return total, torch.cat(outputs, dim=1) if aligned else outputs[0], y

    @torch.no_grad()
    def evaluate(self, batch_size: int = 256) -> tuple[float, float]:
        """(loss, metric) on held-out data: the task's test set if it has one, else the same batch
        every time from the "held_out" stream (so evaluating never changes the training batches,
        and never scores the probe samples a page opens up, which come from the "probe" stream).
        An encoder-decoder is evaluated decoding freely (greedy), not teacher-forced."""
        if hasattr(self.task, "test_set"):
            x, y = self.task.test_set()
        else:
            x, y = self.task.batch(batch_size, stream(self.cfg.seed, "held_out"))
        was_training = self.model.training
        self.model.eval()
        try:
            y_hat, y = scored(self.model, self.task, x, y)
        finally:
            self.model.train(was_training)
        return self.task.loss(y_hat, y).item(), self.task.metric(y_hat, y)

    def freeze(self, *parts: str, frozen: bool = True) -> None:
        """Stop (or with frozen=False, resume) training the named parts: "embedding",
        "layer 0", "layer 1", ..., "head" (see SequenceModel.param_groups)."""
        groups = self.model.param_groups()
        unknown = [p for p in parts if p not in groups]
        if unknown:
            raise ValueError(f"no part named {unknown}; this model has {', '.join(groups)}")
        named = dict(self.model.named_parameters())
        for part in parts:
            for name in groups[part]:
                named[name].requires_grad_(not frozen)

    def unfreeze(self, *parts: str) -> None:
        self.freeze(*parts, frozen=False)

    def history_frame(self) -> pd.DataFrame:
        """One row per kept step (at most history_rows, whatever the steps done): step, loss,
        metric, grad_norm, grad_norm_clipped, diverged; the columns are there before the first step."""
        return self.history.frame()
