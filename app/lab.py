"""Lab: one student's experiment, the task, model and trainer made from a Setup.

It lives in that student's st.session_state (never in a shared cache), and has no Streamlit in
it, so every rule of the page (what rebuilds the model, what only retunes training, what an
upload may replace) is tested without a browser.

Streamlit may start a session's next run (a click on Pause, Step or Reset) while a playing
fragment's training loop is still going in another thread. Every change to the model therefore
happens under the Lab's lock, one whole step at a time, and the loop stops at the next step
boundary once `playing` is cleared.
"""
from __future__ import annotations

import dataclasses
import threading
import time

import pandas as pd
import torch

import engine

from settings import Setup, preset_setup


class Lab:
    def __init__(self, setup: Setup, upload: str | bytes | None = None):
        self.setup = setup
        self.upload = upload  # a corpus or CSV the student uploaded for this task, if any
        self.playing = False
        self.lock = threading.RLock()  # held for every change to the model, task or trainer
        self.build()

    def build(self) -> None:
        """A fresh model from the setup: the same seed gives the same starting weights."""
        self.task = self.setup.make_task(self.upload)
        self.model = engine.build_model(self.setup.model, self.task, seed=self.setup.train.seed)
        self.trainer = engine.Trainer(self.model, self.task, self.setup.train)
        self.opened()

    def opened(self) -> None:
        """Start the measurements of a new model: the samples it is opened up on (drawn from a
        generator of their own, so they never change the training batches), and the log of its
        gradients over training, with its first row at step 0."""
        self.probe = self.task.batch(PROBE_SAMPLES, torch.Generator().manual_seed(self.setup.train.seed + 1))
        self.gradient_log: list[dict] = []
        self.cached: tuple[tuple, dict[int, engine.Recording]] = ((), {})  # (model, step) -> sample -> recording
        self.cached_truncated: tuple[tuple, engine.Recording] | None = None
        self.initial: dict[tuple, pd.DataFrame] = {}  # gradients at initialisation, by sample, stack, seed
        self.measure()

    def recording(self, index: int = 0) -> engine.Recording:
        """The model opened up on probe sample `index` as it is now; recorded again only after
        it has trained (moving a slider or going back to a sample redraws, it does not recompute).
        Jacobian norms are left out where they would be too large to compute (record's own limit)."""
        version = (id(self.model), self.trainer.steps_done)
        if self.cached[0] != version:
            self.cached = (version, {})
        recordings = self.cached[1]
        if index not in recordings:
            with self.lock:
                try:
                    recordings[index] = engine.record(self.model, *self.probe, index=index)
                except ValueError:  # too large for Jacobians: everything else still
                    recordings[index] = engine.record(self.model, *self.probe, index=index, jacobians=False)
        return recordings[index]

    def symbols(self, index: int, stack: str | None = None) -> list[str] | None:
        """What probe sample `index` reads at each step, as the task's own symbols, when its
        inputs are symbols (tokens, or one-hot like recall's); None for values. In the order the
        stack reads them: an encoder set to reverse its source reads it backwards."""
        x = self.probe[0][index]
        if self.task.spec.input_kind == "tokens":
            ids = x.tolist()  # [T]
        elif self.task.vocab is not None and x.dim() == 2:
            ids = x.argmax(dim=1).tolist()  # one-hot symbols (recall): [T, V] -> [T]
        else:
            return None
        if stack == "encoder" and self.setup.model.reverse_source:
            ids = ids[::-1]
        return [self.task.vocab[i] for i in ids]

    def truncated_recording(self, index: int, window: int) -> engine.Recording:
        """Probe sample `index` with its gradients as truncated BPTT with this window computes
        them (engine.record's bptt_window), recorded again only after the model has trained."""
        key = (id(self.model), self.trainer.steps_done, index, window)
        if self.cached_truncated is None or self.cached_truncated[0] != key:
            with self.lock:
                rec = engine.record(self.model, *self.probe, index=index, jacobians=False, bptt_window=window)
            self.cached_truncated = (key, rec)
        return self.cached_truncated[1]

    def initial_gradients(self, index: int, stack: str | None = None) -> pd.DataFrame:
        """‖∂L/∂h_t‖ of the first layer (forward) on probe sample `index`, at initialisation,
        under each of init_schemes(this network): fresh models built from the setup's seed, as
        Reset would build them, never the student's own. Built once per sample, stack and seed.
        Columns init, yours (this network's own scheme), t, value."""
        key = (index, stack, self.setup.train.seed)
        if key not in self.initial:
            with self.lock:
                frames = []
                for name, cfg in init_schemes(self.setup.model).items():
                    model = engine.build_model(cfg, self.task, seed=self.setup.train.seed)
                    rec = engine.record(model, *self.probe, index=index, jacobians=False)
                    g = (rec.stacks[stack] if stack else rec.main).grad_norm_h[0, 0].double().numpy()  # [T]
                    yours = cfg == self.setup.model
                    frames.append(pd.DataFrame({"init": name, "yours": yours, "t": range(len(g)), "value": g}))
                self.initial[key] = pd.concat(frames, ignore_index=True)
        return self.initial[key]

    def tokens(self, index: int, stack: str | None = None) -> list[str] | None:
        """symbols(index, stack) as tick labels: whitespace shown as a visible mark."""
        symbols = self.symbols(index, stack)
        return None if symbols is None else [SHOWN.get(s, s) for s in symbols]

    def measure(self) -> None:
        """Log how much gradient reaches the first step, and every parameter's gradient norm,
        on probe sample 0 (called every RECORD_EVERY steps)."""
        rec = engine.record(self.model, *self.probe, index=0, jacobians=False)
        g = rec.grad_norm_h[0, 0]  # [T]: the first layer, forward direction
        ratio = (g[0] / g[-1]).item() if g[-1] > 0 else float("nan")
        self.gradient_log.append({"step": self.trainer.steps_done, "ratio": ratio, **rec.param_grad_norm})

    def gradient_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.gradient_log)

    def advance(self) -> None:
        """One training step (the caller holds the lock), measured every RECORD_EVERY steps."""
        self.trainer.step(1)
        if self.trainer.steps_done % RECORD_EVERY == 0 and self.trainer.diverged_at is None:
            self.measure()

    def reset(self) -> None:
        self.playing = False
        with self.lock:
            self.build()

    def start(self, setup: Setup) -> None:
        """Begin again from `setup` (a lesson): a fresh model, no upload."""
        self.playing = False
        with self.lock:
            self.setup, self.upload = setup, None
            self.build()

    def step(self) -> None:
        """One training step, pausing first."""
        self.playing = False
        with self.lock:
            self.advance()

    def change(self, setup: Setup, upload: str | bytes | None = None) -> str:
        """Apply new settings. A new task, task parameter, model setting or upload builds a new
        model (training restarts); new training settings carry on from the current weights.
        Nothing changes if the new settings are refused (the ValueError says why)."""
        if setup.upload_param is None:
            upload = None  # only charlm and sentiment read a file
        rebuild = (setup.task, setup.task_params, setup.model, upload) != (
            self.setup.task, self.setup.task_params, self.setup.model, self.upload
        )
        if rebuild:
            task = setup.make_task(upload)  # may raise: then the current lab is untouched
            check_cost(setup, task)
            model = engine.build_model(setup.model, task, seed=setup.train.seed)
            trainer = engine.Trainer(model, task, setup.train)
            self.playing = False
            with self.lock:
                self.setup, self.upload = setup, upload
                self.task, self.model, self.trainer = task, model, trainer
                self.opened()
            return "rebuilt"
        if setup.train != self.setup.train:
            with self.lock:
                self.trainer.retune(setup.train)
                self.setup = setup
            return "retuned"
        return "unchanged"

    def train_for(self, seconds: float, until: int) -> list[engine.StepStats]:
        """Train in single steps for about `seconds`, and never past step `until`, so a page
        tick stays short and a pause lands between two whole steps."""
        done = []
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            with self.lock:
                if not self.playing or self.trainer.steps_done >= until or self.trainer.diverged_at is not None:
                    break
                self.advance()
                done.append(self.trainer.history[-1])
        with self.lock:
            if self.trainer.steps_done >= until or self.trainer.diverged_at is not None:
                self.playing = False
        return done

    def load_model(self, data: bytes) -> None:
        """Replace the model with an uploaded checkpoint. Its task becomes the current task (with
        that task's default parameters if it is another one). Raises ValueError, leaving the lab
        as it was, when the file is not a checkpoint or fits none of this app's tasks."""
        model = engine.from_bytes(data)
        if model.spec.name not in engine.TASKS:
            raise ValueError(f"this model was trained on a task called {model.spec.name!r}, which this app does not have")
        setup = self.setup if model.spec.name == self.setup.task else preset_setup(model.spec.name)
        upload = self.upload if setup is self.setup else None
        task = setup.make_task(upload)
        if model.spec != task.spec:
            raise ValueError(
                f"this model reads {model.spec.input_size} inputs and gives {model.spec.output_size} "
                f"outputs, but the {task.spec.name} task as set here needs {task.spec.input_size} and "
                f"{task.spec.output_size}; set the task's parameters (and, for an uploaded corpus or "
                "CSV, the file) as they were when it was saved"
            )
        opened = dataclasses.replace(setup, model=model.cfg)  # may raise (a model the app does not open)
        trainer = engine.Trainer(model, task, setup.train)  # may raise: then nothing was replaced
        self.playing = False
        with self.lock:
            self.setup = opened
            self.upload, self.task, self.model, self.trainer = upload, task, model, trainer
            self.opened()

    def summary(self) -> dict[str, str]:
        """What the sidebar shows on every page."""
        cfg = self.setup.model
        shape = f"{cfg.num_layers} x {cfg.hidden_size}" + (" bidirectional" if cfg.bidirectional else "")
        last = self.trainer.history[-1] if self.trainer.history else None
        return {
            "task": self.setup.task,
            "model": f"{cfg.arch.upper()} {shape}",
            "parameters": f"{sum(p.numel() for p in self.model.parameters()):,}",
            "steps trained": f"{self.trainer.steps_done:,}",
            "last loss": "-" if last is None else "diverged" if last.diverged else f"{last.loss:.4g}",
        }


def scheme_name(cfg: engine.ModelConfig) -> str:
    """How a network's recurrent weights start: "orthogonal", "scaled, ρ = 1.1, forget bias 3"..."""
    start = {"default": "default", "orthogonal": "orthogonal", "identity": "identity"}.get(cfg.init)
    start = start or f"scaled, ρ = {cfg.spectral_radius:g}"
    if cfg.forget_bias is None:
        return start
    bias = f"forget bias {cfg.forget_bias:g}"
    return bias if cfg.init == "default" else f"{start}, {bias}"


def init_schemes(cfg: engine.ModelConfig) -> dict[str, engine.ModelConfig]:
    """This network under each initialisation the engine offers, one change from PyTorch's
    default at a time: orthogonal W_hh; identity W_hh with zero bias (IRNN, vanilla RNN only);
    W_hh scaled to spectral radius 1 (or to the radius this network sets); for an LSTM the
    forget-gate bias at 1 and 3. This network's own scheme is among them, added if missing."""
    base = dataclasses.replace(cfg, init="default", spectral_radius=None, forget_bias=None)
    schemes = [base, dataclasses.replace(base, init="orthogonal")]
    if cfg.arch == "rnn":
        schemes.append(dataclasses.replace(base, init="identity"))
    schemes.append(dataclasses.replace(base, init="scaled", spectral_radius=cfg.spectral_radius or 1.0))
    if cfg.arch == "lstm":
        schemes += [dataclasses.replace(base, forget_bias=bias) for bias in FORGET_BIASES]
    if cfg not in schemes:
        schemes.append(cfg)
    return {scheme_name(c) + (" (yours)" if c == cfg else ""): c for c in schemes}


FORGET_BIASES = (1.0, 3.0)  # the common choice (Jozefowicz et al. 2015), and the recall lesson's
PROBE_SAMPLES = 8  # samples a student can open the model up on
SHOWN = {" ": "·", "\n": "⏎", "\t": "⇥"}  # characters a tick label would show as nothing
RECORD_EVERY = 25  # steps between the gradient measurements kept over training

# One training step keeps batch x steps x units x layers x directions activations; past this many
# a step takes seconds on a 2-core CPU and a class sharing one server would stall.
MAX_STEP_COST = 2**24


def check_cost(setup: Setup, task: engine.Task) -> None:
    """ValueError when one training step of this setup would be too heavy for a shared CPU."""
    x, _ = task.batch(1)
    steps = x.shape[1] if x.dim() > 1 else task.spec.out_len
    if task.spec.mapping == "encdec":
        steps += task.spec.out_len
    cfg = setup.model
    cost = setup.train.batch_size * steps * cfg.hidden_size * cfg.num_layers * cfg.num_directions
    if cost > MAX_STEP_COST:
        raise ValueError(
            f"one step would process batch {setup.train.batch_size} x {steps} steps x {cfg.hidden_size} "
            f"units x {cfg.num_layers * cfg.num_directions} layer-directions = {cost:,} activations, over "
            f"this app's limit of {MAX_STEP_COST:,} for a shared CPU; lower the batch size, the sequence "
            "length or the hidden size"
        )
