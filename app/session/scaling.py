"""Why sqrt(d_k), trained: the student's transformer twice, from the same seed on the same
batches, once dividing its attention scores by sqrt(d_k) and once not (ModelConfig.attention_scale:
the flag draws nothing, so both start from the same weights), trained in turns as Compare cells
trains its cells (comparison.RoundRobin). No Streamlit here.

Every RECORD_EVERY steps each run logs its held-out loss and metric and engine.saturation on the
first SATURATION_SAMPLES held-out samples: the mean entropy of its attention rows and ||dL/dz||
over every head's softmax input z.
"""
from __future__ import annotations

import dataclasses

import torch

import engine
from app.session.budget import check_runs
from app.session.comparison import RoundRobin, TrainedRun
from app.session.heldout import held_out_set, score
from app.session.link import Setup
from engine.multihead import saturation

SATURATION_SAMPLES = 64  # held-out samples the entropy and the gradient are measured on: a few ms a measurement
# Held-out samples each run is scored on: the Lab's 512 took 1.33 s a score on the lesson's wide reversal
# transformer (it decodes freely, rereading its prefix at every output step), a third of the page's training
# time (benchmarks/README section 8); 128 take a quarter of that.
SCORED_SAMPLES = 128
RUNS = {"divided by √d_k": True, "not divided": False}  # run name -> ModelConfig.attention_scale


def twin_configs(model: engine.ModelConfig) -> dict[str, engine.ModelConfig]:
    """The student's transformer with and without the scaling, everything else as it is."""
    return {name: dataclasses.replace(model, attention_scale=scale) for name, scale in RUNS.items()}


class SaturationRun(TrainedRun):
    """One of the two runs, also measured on `batch`: the mean entropy of its attention rows (nats)
    and ||dL/dz|| over every head's softmax input z."""

    def __init__(self, name: str, cfg: engine.ModelConfig, task: engine.Task, train: engine.TrainConfig,
                 held_out: tuple[torch.Tensor, torch.Tensor], batch: tuple[torch.Tensor, torch.Tensor]):
        self.batch = batch
        super().__init__(name, cfg, task, train, held_out)

    def measure(self) -> None:
        loss, metric = score(self.model, self.trainer.task, *self.held_out)
        measured = saturation(self.model, self.trainer.task.loss, *self.batch)
        self.log.append({"run": self.name, "step": self.steps_done, "loss": loss, "metric": metric,
                         "entropy": measured.entropy, "uniform_entropy": measured.uniform_entropy,
                         "logit_grad_norm": measured.logit_grad_norm})


class ScalingRuns(RoundRobin):
    """The two runs of a transformer setup, trained in turns. `task` is the student's own when
    given (the Lab's: an uploaded corpus is parsed once)."""

    def __init__(self, setup: Setup, upload: str | bytes | None = None, task: engine.Task | None = None):
        super().__init__()
        if setup.model.arch != "transformer":
            raise ValueError(f"the scaling is a transformer's, and this model is {setup.model.arch.upper()}")
        self.setup, self.upload = setup, upload
        self.configs = twin_configs(setup.model)
        self.task = task or setup.make_task(upload)
        check_runs({name: dataclasses.replace(setup, model=cfg) for name, cfg in self.configs.items()}, self.task)
        self.build()

    def build(self) -> None:
        """Fresh runs from the setup's seed, scored on the first of the Lab's held-out samples."""
        self.held_out = tuple(t[:SCORED_SAMPLES] for t in held_out_set(self.task, self.setup.train.seed)[:2])
        batch = tuple(t[:SATURATION_SAMPLES] for t in self.held_out)  # the first held-out inputs and targets
        self.runs = [SaturationRun(name, cfg, self.task, self.setup.train, self.held_out, batch)
                     for name, cfg in self.configs.items()]
        self.seconds = 0.0

    def compares(self, setup: Setup, upload: str | bytes | None = None) -> bool:
        """Whether `setup` would give these same runs: the scaling aside, the same task, data,
        network and training."""
        return (setup.task, setup.task_params, setup.train, upload) == (
            self.setup.task, self.setup.task_params, self.setup.train, self.upload
        ) and setup.model.arch == "transformer" and twin_configs(setup.model) == self.configs
