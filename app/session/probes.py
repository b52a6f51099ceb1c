"""What the pages measure on the model a session has installed: a few fixed probe samples, the
recordings of them, the gradient log over training, and the truncated-BPTT and initialisation
experiments. Each is computed once per version of the weights (the steps trained), under the
session's lock, and a new model gets new Probes. No Streamlit here.
"""
from __future__ import annotations

import dataclasses
import threading
import time

import pandas as pd
import torch

import engine
from app.session.rows import BoundedRows
from engine.rng import stream

PROBE_SAMPLES = 8  # samples a student can open the model up on
RECORD_EVERY = 25  # steps between the gradient measurements kept over training
FORGET_BIASES = (1.0, 3.0)  # the common choice (Jozefowicz et al. 2015), and the recall lesson's


def first_step_ratios(grad_norm_h: torch.Tensor, pad_mask: torch.Tensor | None = None) -> dict[str, float]:
    """How much of the gradient reaches the first step each direction of the first layer reads,
    relative to the last step it reads, from a recording's grad_norm_h [layers, directions, T]:
    "ratio", the forward direction's ‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ (t = 0 over t = T−1), and for a
    bidirectional network "ratio_backward": the backward direction reads x_T first, so its first
    step is t = T−1 and its last t = 0, ‖∂L/∂h_T^←‖ / ‖∂L/∂h_1^←‖ in reading order. NaN where the
    last step's gradient is 0 or either is not finite (a recording that overflowed). With a
    pad_mask [T] (True at a pad), the first and last steps are the first and last real ones: a pad
    only carries the state, so the gradient at a pad before the first word is not the first
    step's."""
    g = grad_norm_h[0].double()  # [directions, T]
    real = torch.arange(g.shape[1]) if pad_mask is None else torch.nonzero(~pad_mask).flatten()  # [real steps]
    if len(real) == 0:
        return {"ratio": float("nan"), **({"ratio_backward": float("nan")} if len(g) > 1 else {})}
    first, last = int(real[0]), int(real[-1])
    reads = [("ratio", g[0, first], g[0, last])] + ([("ratio_backward", g[1, last], g[1, first])] if len(g) > 1 else [])
    return {
        name: (first / last).item() if torch.isfinite(first) and torch.isfinite(last) and last > 0 else float("nan")
        for name, first, last in reads
    }


def probe_samples(task: engine.Task, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The samples a model is opened up on: drawn from the seed's stream for probes, apart from the
    training and held-out batches, and the same for every model of one task and seed (a
    Comparison's cells are opened on the Lab's)."""
    return task.batch(PROBE_SAMPLES, stream(seed, "probe"))


class Probes:
    def __init__(self, trainer: engine.Trainer, model_cfg: engine.ModelConfig, lock: threading.RLock):
        self.trainer, self.model, self.task = trainer, trainer.model, trainer.task
        self.cfg, self.seed, self.lock = model_cfg, trainer.cfg.seed, lock
        self.samples = probe_samples(self.task, self.seed)
        self.log = BoundedRows()  # the gradient log, a row every RECORD_EVERY steps, thinned when long
        self.recordings: tuple[int, dict[int, engine.Recording]] = (-1, {})  # (steps, sample -> recording)
        self.recorded_clock = 0.0  # time.monotonic() when the recordings' step was first recorded
        self.truncated: tuple[tuple, engine.Recording] | None = None
        self.initial: dict[tuple, pd.DataFrame] = {}  # gradients at initialisation, by sample and stack
        self.spectra: tuple[int, dict[str, engine.Spectra], str | None] = (-1, {}, None)  # (steps, by stack, why not)
        self.measure()

    def recording(self, index: int = 0, renew_after: float = 0.0) -> engine.Recording:
        """The model opened up on probe sample `index` as it is now; recorded again only after
        it has trained (moving a slider or going back to a sample redraws, it does not recompute),
        and, with `renew_after` s, not before the kept recording of `index` is that old (a playing
        page: Lab.recording). Jacobian norms are left out where they would be too large to compute
        (record's own limit)."""
        with self.lock:
            steps = self.trainer.steps_done
            recorded_at, recordings = self.recordings
            fresh_enough = time.monotonic() - self.recorded_clock < renew_after
            if index in recordings and (recorded_at == steps or fresh_enough):
                return recordings[index]
            try:
                rec = engine.record(self.model, *self.samples, index=index)
            except ValueError:  # too large for Jacobians: everything else still
                rec = engine.record(self.model, *self.samples, index=index, jacobians=False)
            for name, spectra in self.weight_spectra()[0].items():
                rec.stacks[name].spectra = spectra
            kept = recordings if recorded_at == steps else {}
            if recorded_at != steps:
                self.recorded_clock = time.monotonic()
            self.recordings = (steps, {**kept, index: rec})  # replaced whole: drawn_recording reads it unlocked
            return rec

    @property
    def recorded_at(self) -> int:
        """The step the recordings were made at (-1: none yet)."""
        return self.recordings[0]

    # What the page drew last, read WITHOUT the lock, for downloads made on click: a training loop
    # takes the lock step after step, and a download waiting for it can outlast Streamlit's
    # deferred-file timeout (180 s). Each is None when it has not been made for this model.

    def forget(self) -> None:
        """The weights changed without a training step (the best step restored): the recordings,
        spectra and truncated recording cached by step count are of other weights now. The gradient
        log, a record of the past, stays."""
        with self.lock:
            self.recordings = (-1, {})
            self.spectra = (-1, {}, None)
            self.truncated = None

    def drawn_recording(self, index: int) -> engine.Recording | None:
        """The last recording made of probe sample `index` (at the last step it was asked for)."""
        return self.recordings[1].get(index)

    def drawn_truncated(self, index: int, window: int) -> tuple[engine.Recording, engine.Recording] | None:
        """The last full and truncated recordings of sample `index` with this window, of one step."""
        truncated, (recorded_at, recordings) = self.truncated, self.recordings
        if truncated is None or truncated[0] != (recorded_at, index, window) or index not in recordings:
            return None
        return recordings[index], truncated[1]

    def drawn_initial(self, index: int, stack: str | None = None) -> pd.DataFrame | None:
        return self.initial.get((index, stack, self.trainer.cfg.seed))

    def weight_spectra(self) -> tuple[dict[str, engine.Spectra], str | None]:
        """W_hh's eigen- and singular values by stack, computed once per version of the weights
        (every probe sample shares them), and why there are none when the engine refuses them
        (over its size limit, a non-finite weight, a model with no W_hh)."""
        with self.lock:
            steps = self.trainer.steps_done
            if self.spectra[0] != steps:
                try:
                    self.spectra = (steps, engine.weight_spectra(self.model), None)
                except ValueError as err:
                    self.spectra = (steps, {}, str(err))
            return self.spectra[1], self.spectra[2]

    def truncated_recording(self, index: int, window: int) -> engine.Recording:
        """Probe sample `index` with its gradients as truncated BPTT with this window computes
        them (engine.record's bptt_window), recorded again only after the model has trained."""
        with self.lock:
            key = (self.trainer.steps_done, index, window)
            if self.truncated is None or self.truncated[0] != key:
                rec = engine.record(self.model, *self.samples, index=index, jacobians=False, bptt_window=window)
                self.truncated = (key, rec)
            return self.truncated[1]

    def initial_gradients(self, index: int, stack: str | None = None) -> pd.DataFrame:
        """‖∂L/∂h_t‖ of the first layer (forward) on probe sample `index`, at initialisation,
        under each of init_schemes(this network): fresh models built from the seed, as Reset
        would build them, never the student's own. Built once per sample, stack and seed.
        Columns init, yours (this network's own scheme), t, value."""
        seed = self.trainer.cfg.seed  # a new seed on Build & Train is the one Reset builds from
        key = (index, stack, seed)
        with self.lock:
            if key not in self.initial:
                frames = []
                for name, cfg in init_schemes(self.cfg).items():
                    model = engine.build_model(cfg, self.task, seed=seed)
                    rec = engine.record(model, *self.samples, index=index, jacobians=False)
                    g = (rec.stacks[stack] if stack else rec.main).grad_norm_h[0, 0].double().numpy()  # [T]
                    yours = cfg == self.cfg
                    frames.append(pd.DataFrame({"init": name, "yours": yours, "t": range(len(g)), "value": g}))
                self.initial[key] = pd.concat(frames, ignore_index=True)
            return self.initial[key]

    def measure(self) -> None:
        """Log how much gradient reaches the first step of each direction (first_step_ratios), and
        every parameter's gradient norm, on probe sample 0 (called every RECORD_EVERY steps; the
        caller holds the lock)."""
        rec = engine.record(self.model, *self.samples, index=0, jacobians=False)
        ratios = first_step_ratios(rec.grad_norm_h, rec.pad_mask)
        self.log.append({"step": self.trainer.steps_done, **ratios, **rec.param_grad_norm})

    def trained(self) -> None:
        """After each training step: measure every RECORD_EVERY steps, unless it diverged."""
        if self.trainer.steps_done % RECORD_EVERY == 0 and self.trainer.diverged_at is None:
            self.measure()

    def log_frame(self) -> pd.DataFrame:
        """The gradient log, a row every RECORD_EVERY steps (older ones thinned past MAX_ROWS). Read
        without the lock: rows are appended whole, so a copy is a consistent log (a download made
        while training holds the lock need not wait for it)."""
        return pd.DataFrame(self.log.rows())


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
