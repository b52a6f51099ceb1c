"""Comparison: one task, one seed, one training budget, several networks trained side by side.
Either four cells (tanh RNN, ReLU RNN, LSTM, GRU): the vanishing-gradient lesson in one picture;
or the student's own network from each initialisation of W_hh (PyTorch's default, orthogonal,
identity; for an LSTM also a forget bias of 1): the Bucharest lecture's "training strategies" as one experiment;
or echo state networks: tanh RNNs of the student's size whose W_hh is drawn once at a spectral
radius and never trained, only their read-out learning; or the student's network without and with
layer normalisation and zoneout, the Bucharest lecture's two other training strategies.

Made from a student's Setup and kept in their st.session_state (never in a shared cache), with no
Streamlit in it. It plays like the Lab (playback.py): every change to a model happens under the
Comparison's lock, one whole step at a time.
"""
from __future__ import annotations

import dataclasses
import time
from abc import abstractmethod
from collections import deque

import pandas as pd
import torch

import engine
from app.session.budget import check_runs
from app.session.heldout import held_out_set, score
from app.session.link import Setup
from app.session.memory import one_step, weights_bytes
from app.session.playback import Playback
from app.session.probes import RECORD_EVERY, first_step_ratios, probe_samples
from app.session.rows import BoundedRows
from engine.config import DECODER, SHAPE, START, fields_of

# The cell of each run; the rest of the network is the student's (KEPT).
CELLS = {
    "tanh RNN": {"arch": "rnn", "activation": "tanh"},
    "ReLU RNN": {"arch": "rnn", "activation": "relu"},
    "LSTM": {"arch": "lstm", "activation": "tanh"},
    "GRU": {"arch": "gru", "activation": "tanh"},
}
KEPT = fields_of(SHAPE, START, DECODER, every_cell=True)
# How each run of an initialisation experiment starts; everything else is the student's network.
# "forget bias 1" is for an LSTM only (Gers, Schmidhuber & Cummins 2000; Jozefowicz et al. 2015).
# The identity start of a ReLU RNN is Le et al.'s IRNN, and named so (initialisation_configs).
INITIALISATIONS = {
    "PyTorch default": {"init": "default", "spectral_radius": None, "forget_bias": None},
    "orthogonal": {"init": "orthogonal", "spectral_radius": None, "forget_bias": None},
    "identity": {"init": "identity", "spectral_radius": None, "forget_bias": None},
    "forget bias 1": {"init": "default", "spectral_radius": None, "forget_bias": 1.0},
}
LSTM_ONLY = ("forget bias 1",)
# The spectral radii of the echo state networks' reservoirs: from fading memory through the most
# memory to chaos (the lesson's figures).
RESERVOIR_RADII = (0.9, 1.2, 1.5, 2.0, 3.0)
# Zoneout's probability when the student's network has none (Krueger et al. 2017 zone out 5-50% of
# a state's units; the lesson's figures are at this one).
ZONEOUT = 0.5
KINDS = ("cells", "initialisations", "reservoirs", "normalisation")  # what a comparison varies
TIMED_STEPS = 200  # the latest training steps whose wall-clock time each run keeps
DIRECTIONS = ("forward", "backward")  # held-out samples the loss is measured on, the same ones for every run


def cell_configs(model: engine.ModelConfig, names: tuple[str, ...]) -> dict[str, engine.ModelConfig]:
    """The student's network with each cell in turn: its size, depth, direction, embedding,
    initialisation and attention (KEPT), and its dropout where a recurrent net has one (between
    stacked layers). The LSTM keeps the student's forget bias when theirs is an LSTM, because that
    is how its weights start, like the initialisation the others keep. No peepholes: the four
    textbook cells. A transformer's own settings have no meaning for a cell and are left out."""
    kept = {field: getattr(model, field) for field in KEPT}
    if model.num_layers > 1:
        kept["dropout"] = model.dropout
    forget_bias = {"forget_bias": model.forget_bias if model.arch == "lstm" else None}
    return {
        name: engine.ModelConfig(**CELLS[name], **kept, **(forget_bias if name == "LSTM" else {})) for name in names
    }


def initialisation_configs(model: engine.ModelConfig) -> dict[str, engine.ModelConfig]:
    """The student's network, cell and all, from each initialisation its cell takes. ValueError for
    a transformer, which has no W_hh to start."""
    if model.arch == "transformer":
        raise ValueError("a transformer has no recurrent weights W_hh to start in different ways; set a "
                         "recurrent cell on Build & Train, or compare the four cells or echo state networks")
    irnn = (model.arch, model.activation) == ("rnn", "relu")
    return {f"{name} (IRNN)" if name == "identity" and irnn else name: dataclasses.replace(model, **start)
            for name, start in INITIALISATIONS.items() if model.arch == "lstm" or name not in LSTM_ONLY}


def reservoir_configs(model: engine.ModelConfig) -> dict[str, engine.ModelConfig]:
    """Echo state networks of the student's size, depth, direction and embedding: tanh RNNs whose
    W_hh (each layer's, each direction's) is scaled to each of RESERVOIR_RADII."""
    kept = {field: getattr(model, field) for field in KEPT if field not in ("init", "spectral_radius")}
    return {f"ρ = {rho:g}": engine.ModelConfig(arch="rnn", activation="tanh", init="scaled", spectral_radius=rho,
                                              **kept) for rho in RESERVOIR_RADII}


def normalisation_configs(model: engine.ModelConfig) -> dict[str, engine.ModelConfig]:
    """The student's network, cell and start and all, as it is without layer normalisation and
    zoneout, with each, and with both (the student's zoneout probability if they set one, else
    ZONEOUT). ValueError for a transformer, which normalises every sublayer and has no state to zone out."""
    if model.arch == "transformer":
        raise ValueError("a transformer already normalises every sublayer and has no recurrent state to zone out; "
                         "set a recurrent cell on Build & Train, or compare the four cells")
    p = model.zoneout or ZONEOUT
    # short names: the figures' legends stand beside plots half a page wide
    variants = {"without": (False, 0.0), "layer norm": (True, 0.0), f"zoneout {p:g}": (False, p), "both": (True, p)}
    return {name: dataclasses.replace(model, layer_norm=norm, zoneout=zoneout)
            for name, (norm, zoneout) in variants.items()}


def run_configs(kind: str, model: engine.ModelConfig, cells: tuple[str, ...]) -> dict[str, engine.ModelConfig]:
    """The networks a comparison of `kind` trains, by run name."""
    configs = {"cells": lambda: cell_configs(model, cells), "initialisations": lambda: initialisation_configs(model),
               "reservoirs": lambda: reservoir_configs(model), "normalisation": lambda: normalisation_configs(model)}
    return configs[kind]()


class TrainedRun:
    """One model and its trainer, trained one step at a time: its loss and metric on the held-out
    samples logged every RECORD_EVERY steps (and at the budget's last step), and the wall-clock
    time of its latest training steps kept (measurements not included)."""

    def __init__(self, name: str, cfg: engine.ModelConfig, task: engine.Task, train: engine.TrainConfig,
                 held_out: tuple[torch.Tensor, torch.Tensor]):
        self.name, self.cfg = name, cfg
        self.model = self.starting_model(cfg, task, train.seed)
        self.trainer = engine.Trainer(self.model, task, train)
        self.held_out = held_out
        self.step_seconds: deque[float] = deque(maxlen=TIMED_STEPS)
        self.log = BoundedRows()  # a row every RECORD_EVERY steps, thinned when long
        self.measure()

    def starting_model(self, cfg: engine.ModelConfig, task: engine.Task, seed: int) -> torch.nn.Module:
        """The weights the run starts from: the seed's, as the Lab builds them."""
        return engine.build_model(cfg, task, seed=seed)

    @property
    def steps_done(self) -> int:
        return self.trainer.steps_done

    @property
    def stopped(self) -> bool:
        return self.trainer.diverged_at is not None

    def measure(self) -> None:
        loss, metric = score(self.model, self.trainer.task, *self.held_out)
        self.log.append({"run": self.name, "step": self.steps_done, "loss": loss, "metric": metric})

    def advance(self, final: bool) -> None:
        """One training step, timed; measured every RECORD_EVERY steps and at the `final` step of
        the budget, never after a step that diverged (it was not applied)."""
        with one_step():  # its held-out scoring too: 128 windows' outputs at once
            start = time.perf_counter()
            self.trainer.step(1)
            self.step_seconds.append(time.perf_counter() - start)
            if not self.stopped and (final or self.steps_done % RECORD_EVERY == 0):
                self.measure()


class Run(TrainedRun):
    """One cell's run, also measured on probe sample 0 every RECORD_EVERY steps: ||dL/dh_t|| of
    the first layer's every direction and the share of it that reaches the first step each
    direction reads (first_step_ratios)."""

    def __init__(self, name: str, cfg: engine.ModelConfig, task: engine.Task, train: engine.TrainConfig,
                 probe: tuple[torch.Tensor, torch.Tensor], held_out: tuple[torch.Tensor, torch.Tensor]):
        self.probe = probe
        super().__init__(name, cfg, task, train, held_out)

    @property
    def curves(self) -> torch.Tensor:
        """||dL/dh_t|| of the first layer's every direction at the last measurement: [directions, T]."""
        return self.measured[1]

    def measure(self) -> None:
        """Append a row to the log and publish (step, curves) as one tuple: both are read without
        the lock by downloads made on click (rows are never changed once appended)."""
        rec = engine.record(self.model, *self.probe, index=0, jacobians=False)
        loss, metric = score(self.model, self.trainer.task, *self.held_out)
        self.log.append({"run": self.name, "step": self.steps_done, **first_step_ratios(rec.grad_norm_h, rec.pad_mask),
                         "loss": loss, "metric": metric})
        self.measured = (self.steps_done, rec.grad_norm_h[0])  # [directions, T]


class RoundRobin(Playback):
    """Runs on one task trained in turns, one step each, so they stay within one step of each
    other; a subclass makes them in build(), again on reset."""

    runs: list[TrainedRun]

    @abstractmethod
    def build(self) -> None:
        """Fresh runs (self.runs) from the seed, and self.seconds = 0."""

    def held_bytes(self) -> int:
        """Every run's weights four times over, and their tasks' data, each task once. 0 until built."""
        runs = list(getattr(self, "runs", ()))
        tasks = {id(run.trainer.task): run.trainer.task for run in runs}
        return sum(weights_bytes(run.model) for run in runs) + sum(task.held_bytes() for task in tasks.values())

    @property
    def steps_done(self) -> int:
        """The steps of the run furthest on (the others stand at most one behind, unless stopped)."""
        return max(run.steps_done for run in self.runs)

    @property
    def trained(self) -> bool:
        return self.steps_done > 0

    def stopped(self) -> list[TrainedRun]:
        return [run for run in self.runs if run.stopped]

    def finished(self, until: int) -> bool:
        return all(run.stopped or run.steps_done >= until for run in self.runs)

    @property
    def steps_taken(self) -> int:
        return sum(run.steps_done for run in self.runs)

    def steps_left(self, until: int) -> int:
        return sum(max(0, until - run.steps_done) for run in self.runs if not run.stopped)

    def advance(self, until: int) -> bool:
        """One step of the run furthest behind (the first of them, in the order of the runs), so
        the runs take turns and stay within one step of each other; False when every run has
        reached `until` or stopped. The caller holds the lock."""
        behind = [run for run in self.runs if not run.stopped and run.steps_done < until]
        if not behind:
            return False
        run = min(behind, key=lambda r: r.steps_done)
        run.advance(final=run.steps_done + 1 == until)
        return True

    def step(self) -> None:
        """Pause, then one training step of every run still going that stands at the fewest steps
        (a pause can land mid-round): afterwards all stand level, each measured."""
        self.playing = False
        with self.hold():
            going = [run.steps_done for run in self.runs if not run.stopped]
            if going:
                while self.advance(min(going) + 1):
                    pass

    def reset(self) -> None:
        self.playing = False
        with self.lock:
            self.build()

    def log_frame(self) -> pd.DataFrame:
        """Every measurement of every run: run, step, loss, metric (and what a subclass's runs log).
        Read without the lock: each run's rows are only ever appended, each whole."""
        return pd.DataFrame([row for run in self.runs for row in run.log.rows()])

    def history_frame(self) -> pd.DataFrame:
        """Every training step of every run: run, then the Trainer's columns. Read without the lock:
        each history is published whole after every step (engine.History.kept)."""
        frame = pd.concat([run.trainer.history_frame().assign(run=run.name) for run in self.runs], ignore_index=True)
        return frame[["run", *frame.columns.drop("run")]]


class Comparison(RoundRobin):
    """The runs of one setup, trained in turns: of every cell in `cells` (all four by default), with
    kind="initialisations" of the student's network from each initialisation, with kind="reservoirs"
    of echo state networks at each spectral radius, with kind="normalisation" of the student's network
    without and with layer normalisation and zoneout. `task` is the student's own when given (the
    Lab's: an uploaded corpus is parsed once)."""

    def __init__(self, setup: Setup, upload: str | bytes | None = None, cells: tuple[str, ...] = tuple(CELLS),
                 task: engine.Task | None = None, kind: str = "cells"):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        self.setup, self.kind, self.cell_names = setup, kind, cells
        self.upload = upload  # the student's own corpus or CSV, so the runs read the same data
        self.configs = run_configs(kind, setup.model, cells)  # run name -> its network
        self.task = task or setup.make_task(upload)
        check_runs({name: dataclasses.replace(setup, model=cfg) for name, cfg in self.configs.items()}, self.task)
        self.build()

    def build(self) -> None:
        """Fresh runs from the setup's seed. They share one task (it only hands out batches from
        each trainer's own generator) and the probe samples the Lab opens its model up on."""
        self.probe = probe_samples(self.task, self.setup.train.seed)
        self.held_out = held_out_set(self.task, self.setup.train.seed)[:2]  # the Lab's, as Build & Train scores
        self.runs = [Run(name, cfg, self.task, self.setup.train, self.probe, self.held_out)
                     for name, cfg in self.configs.items()]
        if self.kind == "reservoirs":  # only the read-out trains: every part but the head frozen
            for run in self.runs:
                parts = run.model.param_groups()
                if "head" not in parts:
                    raise ValueError(f"an echo state network trains one read-out (a head) on its reservoir's "
                                     f"states, and this task's network has none ({', '.join(parts)}): pick a "
                                     "task with one answer per sequence or per step")
                run.trainer.freeze(*[part for part in parts if part != "head"])
        self.seconds = 0.0  # spent training them, measurements included

    def compares(self, setup: Setup, upload: str | bytes | None = None, kind: str | None = None) -> bool:
        """Whether `setup` (and `kind`, unless None) would give these same runs: the same task,
        data, networks and training (for cells, whichever cell the student picked)."""
        try:
            configs = run_configs(self.kind, setup.model, self.cell_names)
        except ValueError:  # a setup this kind cannot compare (a transformer's initialisations)
            return False
        return (kind in (None, self.kind)
                and (setup.task, setup.task_params, setup.train, upload, configs)
                == (self.setup.task, self.setup.task_params, self.setup.train, self.upload, self.configs))

    def curves_frame(self) -> pd.DataFrame:
        """||dL/dh_t|| of every run at its last measurement, of each direction of the first layer:
        run, step, direction ("forward", "backward"), t, value. Read without the lock (see Run.measure)."""
        frames = []
        for run in self.runs:
            step, curves = run.measured  # one read: a step and its curves
            frames += [pd.DataFrame({"run": run.name, "step": step, "direction": DIRECTIONS[d],
                                     "t": range(curve.shape[-1]), "value": curve.tolist()})
                       for d, curve in enumerate(curves)]
        return pd.concat(frames, ignore_index=True)


def setup_text(setup: Setup, kind: str = "cells") -> str:
    """The settings a comparison runs on, in one line: task, network, training, seed (comparing
    initialisations, the cell and not the initialisation, which each run sets for itself)."""
    params = ", ".join(f"{k} {v}" for k, v in setup.task_params.items())
    cfg, train = setup.model, setup.train
    network = f"{cfg.num_layers} layer{'s' * (cfg.num_layers > 1)} × {cfg.hidden_size} units"
    if kind in ("initialisations", "normalisation"):
        network = f"{cell_name(cfg)}, {network}"
    elif kind == "reservoirs":
        network = f"tanh RNN reservoirs, {network}, W_hh fixed at each ρ, only the read-out trained"
    network += ", bidirectional" if cfg.bidirectional else ""
    if kind in ("cells", "normalisation"):  # the others set each run's start themselves
        network += f", {cfg.init} initialisation" if cfg.init != "default" else ""
        network += f" to ρ {cfg.spectral_radius:g}" if cfg.spectral_radius is not None else ""
    if kind == "normalisation":  # every variant keeps the student's peepholes and forget bias
        network += ", peepholes" if cfg.peephole else ""
        network += f", forget bias {cfg.forget_bias:g}" if cfg.arch == "lstm" and cfg.forget_bias is not None else ""
    network += f", {cfg.attention} attention" if cfg.attention else ""
    if kind == "initialisations":  # every start keeps the student's variant of the cell
        network += ", peepholes" if cfg.peephole else ""
        network += ", layer norm" if cfg.layer_norm else ""
        network += f", zoneout {cfg.zoneout:g}" if cfg.zoneout else ""
    network += f", dropout {cfg.dropout:g}" if cfg.dropout and kind != "reservoirs" else ""
    if kind == "cells" and cfg.arch == "lstm" and cfg.forget_bias is not None:
        network += f", LSTM forget bias {cfg.forget_bias:g}"
    training = [f"{train.optimizer} lr {train.lr:g}", f"batch {train.batch_size}"]
    if train.clip_norm is not None:
        training.append(f"clip norm {train.clip_norm:g}")
    if train.clip_value is not None:
        training.append(f"clip value {train.clip_value:g}")
    if train.bptt_window:
        training.append(f"truncated BPTT every {train.bptt_window} steps")
    task = f"{setup.task} ({params})" if params else setup.task
    return f"{task} · {network} · {', '.join(training)} · seed {train.seed}"


def cell_name(cfg: engine.ModelConfig) -> str:
    """'tanh RNN', 'ReLU RNN', 'LSTM' or 'GRU' as CELLS names them, else e.g. 'sigmoid RNN'."""
    named = [name for name, cell in CELLS.items() if cell == {"arch": cfg.arch, "activation": cfg.activation}]
    if named or cfg.arch == "transformer":
        return named[0] if named else "transformer"
    return f"{cfg.activation} {cfg.arch.upper()}"
