"""The spectral radius, swept (issue 16): fresh vanilla RNNs, tanh and linear, whose W_hh is scaled
to a spectral radius ρ, opened up on one sample to see ‖∂L/∂h_t‖ fan out around ρ = 1, as Pascanu,
Mikolov & Bengio (2013) state the conditions. No Streamlit here.

The networks are untrained on purpose: the conditions are about the recurrence W_hh as it starts,
and a fresh network per ρ is the only way to move ρ and nothing else. Two starts are offered:
W_hh orthogonal, then scaled (every singular value is ρ, so σ_max = ρ, Pascanu's condition on σ_max
meets the eigenvalue's at ρ = 1, and a linear RNN's gradient is exactly ρ^(T−t) · ‖∂L/∂h_T‖), and
PyTorch's default draw scaled to ρ (the engine's init="scaled"), whose σ_max is larger than ρ.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import torch

import engine
from app.session.probes import probe_samples
from engine.init import initialise

RHO_MIN, RHO_MAX, RHO_STEP = 0.8, 1.2, 0.05
GRID = tuple(round(RHO_MIN + k * RHO_STEP, 2) for k in range(9))  # every slider position: 0.8, 0.85, ..., 1.2
FAN = (0.8, 0.9, 1.0, 1.1, 1.2)  # the faint lines behind the slider's
ACTIVATIONS = ("tanh", "linear")  # |φ'| ≤ γ = 1 for both
STARTS = {
    "orthogonal": "orthogonal, then × ρ (σ_max = ρ)",
    "default": "PyTorch's default draw, scaled to ρ (σ_max > ρ)",
}
# The course's example: the adding problem at T = 50 with the preset's 64 units, weights from seed 0.
ADDING_LENGTH, ADDING_HIDDEN, ADDING_SEED = 50, 64, 0
# The student's own network is swept up to this width: 18 networks a start, each recorded and its W_hh's
# spectrum taken (at H 128 and T 500 the first open took 1.2 s here, the page included).
OWN_MAX_HIDDEN = 128
CELLS = {"rnn": "an RNN", "lstm": "an LSTM", "gru": "a GRU", "transformer": "a transformer"}
ADDING_NAME = f"the adding problem (T = {ADDING_LENGTH}, {ADDING_HIDDEN} units, seed {ADDING_SEED})"


@dataclasses.dataclass(frozen=True)
class Source:
    """What is swept: a task, its probe samples, and the network apart from ρ and the activation."""

    name: str
    task: engine.Task
    samples: tuple[torch.Tensor, torch.Tensor]
    base: engine.ModelConfig  # a one-layer, one-direction RNN
    seed: int


def adding_source() -> Source:
    task = engine.make_task("adding", seq_len=ADDING_LENGTH, seed=ADDING_SEED)
    base = engine.ModelConfig(arch="rnn", hidden_size=ADDING_HIDDEN)
    return Source(ADDING_NAME, task, probe_samples(task, ADDING_SEED), base, ADDING_SEED)


def own_problem(model: torch.nn.Module) -> str | None:
    """Why a student's model cannot be swept (the theory is that of one recurrence W_hh), or None."""
    cfg = model.cfg
    if cfg.arch != "rnn" or not isinstance(model, engine.SequenceModel):
        return f"yours is {CELLS[cfg.arch]}{'' if isinstance(model, engine.SequenceModel) else ' encoder-decoder'}"
    if cfg.num_layers > 1 or cfg.bidirectional:
        return "yours has more than one layer or direction"
    if cfg.hidden_size > OWN_MAX_HIDDEN:
        return f"yours has {cfg.hidden_size} units (the sweep builds {2 * len(GRID)} such networks and their spectra)"
    return None


def own_source(model: torch.nn.Module, task: engine.Task, samples, seed: int, task_name: str) -> Source:
    """The student's task and network (its size and inputs), with only ρ and the activation swept."""
    base = dataclasses.replace(model.cfg, init="default", spectral_radius=None)
    return Source(f"your task ({task_name}, {model.cfg.hidden_size} units, seed {seed})", task, samples, base, seed)


def config(base: engine.ModelConfig, activation: str, rho: float, start: str) -> engine.ModelConfig:
    """The network's config: the engine scales the default draw itself; the orthogonal one is drawn
    orthogonal and scaled after (build), as the engine has no scheme for both."""
    if start == "orthogonal":
        return dataclasses.replace(base, activation=activation, init="orthogonal", spectral_radius=None)
    return dataclasses.replace(base, activation=activation, init="scaled", spectral_radius=rho)


def build(source: Source, activation: str, rho: float, start: str) -> torch.nn.Module:
    """A fresh network whose W_hh has spectral radius ρ, from the source's seed."""
    cfg = config(source.base, activation, rho, start)
    model = engine.build_model(cfg, source.task, seed=source.seed)
    if start == "orthogonal":  # the engine's own rescaling step, applied to the orthogonal draw
        initialise(model.rnn, dataclasses.replace(cfg, init="scaled", spectral_radius=rho))
    return model


@dataclasses.dataclass(frozen=True)
class Curve:
    """One network's ‖∂L/∂h_t‖ on the sample, and its W_hh's measured spectrum."""

    activation: str
    rho: float  # asked for
    w_hh: torch.Tensor  # [H, H] as built
    grad_norm_h: np.ndarray  # [T] engine.record's, layer 0 forward
    radius: float  # max |eigenvalue| of W_hh, measured
    sigma_max: float  # its largest singular value, ‖W_hh‖₂
    pads: int  # pad steps in the sample, where the state is carried through without W_hh

    @property
    def ratio(self) -> float:
        """‖∂L/∂h_1‖ / ‖∂L/∂h_T‖: t = 0 over t = T−1 (first_step_ratios' convention)."""
        return float(self.grad_norm_h[0] / self.grad_norm_h[-1])


def measure(source: Source, index: int, activation: str, rho: float, start: str) -> Curve:
    model = build(source, activation, rho, start)
    rec = engine.record(model, *source.samples, index=index, jacobians=False, spectra=True)
    return Curve(
        activation=activation, rho=rho, w_hh=model.rnn.weight_hh_l0.detach().clone(),
        grad_norm_h=rec.grad_norm_h[0, 0].double().numpy(),  # [T]
        radius=float(rec.eigenvalues.abs().max()), sigma_max=float(rec.singular_values.max()),
        pads=0 if rec.pad_mask is None else int(rec.pad_mask.sum()),
    )


class Sweep:
    """The curves of one source and sample, each measured once (by activation, ρ and start)."""

    def __init__(self, source: Source, index: int):
        self.source, self.index = source, index
        self.curves: dict[tuple[str, float, str], Curve] = {}  # at most len(GRID) x 2 x 2

    def same(self, source: Source, index: int) -> bool:
        """Whether this sweep is of that source's task (the same object), network and sample."""
        mine = self.source
        same_network = (mine.base, mine.seed, mine.name) == (source.base, source.seed, source.name)
        return mine.task is source.task and same_network and self.index == index

    def curve(self, activation: str, rho: float, start: str) -> Curve:
        key = (activation, round(rho, 2), start)  # a slider's 0.8500000001 is 0.85
        if key not in self.curves:
            self.curves[key] = measure(self.source, self.index, *key)
        return self.curves[key]

    def frame(self, rhos, start: str) -> pd.DataFrame:
        """‖∂L/∂h_t‖ of both activations at each ρ: columns activation, rho, t, value."""
        frames = [pd.DataFrame({"activation": a, "rho": round(rho, 2), "t": np.arange(len(c.grad_norm_h)),
                                "value": c.grad_norm_h})
                  for a in ACTIVATIONS for rho in rhos for c in [self.curve(a, rho, start)]]
        return pd.concat(frames, ignore_index=True)

    def ratios(self, start: str) -> pd.DataFrame:
        """‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ at every slider position: columns activation, rho, ratio."""
        return pd.DataFrame([{"activation": a, "rho": rho, "ratio": self.curve(a, rho, start).ratio}
                             for a in ACTIVATIONS for rho in GRID])


def sweep_for(held: Sweep | None, own: Source | None, index: int) -> Sweep:
    """`held` while it sweeps that source (own, else the adding problem, made once) and sample;
    else a new Sweep."""
    if own is None:
        own = held.source if held is not None and held.source.name == ADDING_NAME else adding_source()
    return held if held is not None and held.same(own, index) else Sweep(own, index)


# What the section says, with the figures on screen (the page shows these beside the figures).
CONDITIONS = (
    "One step back multiplies the gradient by the Jacobian $\\partial h_t/\\partial h_{t-1} = "
    "\\mathrm{diag}(\\varphi'(a_t))\\,W_{hh}$, where $|\\varphi'| \\le \\gamma$ ($\\gamma = 1$ for tanh and for a "
    "linear RNN). With one loss after the last step, $\\|\\partial L/\\partial h_t\\| \\le "
    "(\\gamma\\,\\sigma_{max})^{T-t}\\,\\|\\partial L/\\partial h_T\\|$, $\\sigma_{max} = \\|W_{hh}\\|_2$ the "
    "largest singular value of $W_{hh}$. "
    "**Pascanu, Mikolov & Bengio (2013):** $\\sigma_{max} < 1/\\gamma$ is *sufficient* for the gradient to vanish; "
    "$\\sigma_{max} > 1/\\gamma$ is *necessary* for it to explode. For a linear RNN the eigenvalues decide, as "
    "$\\|\\partial h_T/\\partial h_t\\| = \\|W_{hh}^{T-t}\\|$ grows like $\\rho^{T-t}$: $\\rho < 1$ is sufficient for "
    "vanishing, $\\rho > 1$ necessary for exploding."
)


# What the orthogonal start shows on each side of ρ = 1 (np.sign(ρ − 1)), where σ_max = ρ.
ORTHOGONAL = {
    -1: "Here σ_max = ρ < 1: Pascanu's sufficient condition holds, and both gradients vanish, as it says they must.",
    0: "At the edge, σ_max = ρ = 1, the linear gradient keeps its size all the way back; tanh's still shrinks, "
       "by tanh′ < 1 at every step.",
    1: "Here σ_max = ρ > 1: the necessary condition for exploding holds, and the linear gradient explodes, while "
       "tanh's saturating units hold its gradient back: necessary, not enough.",
}


def number(value: float) -> str:
    """A ratio as a caption quotes it; a gradient that left float32's range says so."""
    return f"{value:.2g}" if np.isfinite(value) else "not finite (float32 overflowed)"


def off_theory(sweep: Sweep, curve: Curve) -> str | None:
    """Why ‖∂L/∂h_t‖ need not follow ρ^(T−t) on this sample, or None when the theory applies."""
    if sweep.source.task.spec.mapping != "seq2vec":
        return ("This task has a loss at every step, so ‖∂L/∂h_t‖ also collects each step's own term: the "
                "ρ^(T−t) theory is that of one loss, after the last step.")
    if curve.pads:
        return (f"This sample has {curve.pads} pad steps, where the state is carried through without W_hh: ρ "
                "multiplies the gradient at the real steps only.")
    return None


def fan_words(sweep: Sweep, tanh: Curve, linear: Curve, start: str) -> str:
    """What the fan shows, with the slider's figures."""
    T, rho = len(tanh.grad_norm_h), tanh.rho
    text = (
        f"Fresh, untrained networks on {sweep.source.name}, sample {sweep.index}: only ρ and the activation change, "
        "and your own model is not touched (the conditions are about the recurrence as it starts). At ρ = "
        f"{rho:.2f}, W_hh's largest |eigenvalue| measures {tanh.radius:.4g} and σ_max = {tanh.sigma_max:.4g}; "
        f"‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ is **{number(tanh.ratio)}** for tanh and **{number(linear.ratio)}** for linear, "
        f"where ρ^(T−1) = {rho ** (T - 1):.2g}. "
    )
    if not all(np.isfinite(c.grad_norm_h).all() and (c.grad_norm_h > 0).all() for c in (tanh, linear)):
        text += "Where a line breaks off, float32 overflowed (inf or NaN) or reached 0 there. "
    if off_theory(sweep, tanh):
        return text + off_theory(sweep, tanh)
    if start == "orthogonal":
        side = ORTHOGONAL[int(np.sign(rho - 1))]
        return text + ("Every singular value is ρ, so the linear RNN's line is ρ^(T−t) itself (the dotted line runs "
                       f"on it) and tanh's, scaled by tanh′ ≤ 1 at every step too, stays under it. {side}")
    return text + ("σ_max is larger than ρ here, so σ_max^(T−t) bounds nothing useful; the eigenvalue sets the "
                   "long-run rate instead: a few steps back from T, where the components of the smaller eigenvalues "
                   "have died out, the linear line runs parallel to the dotted ρ^(T−t).")


def ratio_words(sweep: Sweep, start: str) -> str:
    """What the ratios against ρ show: where Pascanu's edge σ_max = 1 lies, and the ends of each line."""
    low, high = (sweep.curve("tanh", rho, start) for rho in (RHO_MIN, RHO_MAX))
    low_linear, high_linear = (sweep.curve("linear", rho, start) for rho in (RHO_MIN, RHO_MAX))
    per_rho = low.sigma_max / low.radius  # scaling W_hh scales its singular values with its eigenvalues
    edge = (" (shaded: left of it the gradient must vanish; right of it, it may explode, or not)."
            if RHO_MIN < 1 / per_rho < RHO_MAX else
            ", off this slider: everywhere on it the necessary condition for exploding holds and the sufficient "
            "one for vanishing does not, so neither decides.")
    return (
        f"Each point is one fresh network's ‖∂L/∂h_1‖ / ‖∂L/∂h_T‖ (t = 0 over t = {len(low.grad_norm_h) - 1}). "
        f"Scaling W_hh scales its singular values with its eigenvalues: here σ_max = {per_rho:.3g} × ρ, so Pascanu's "
        f"edge σ_max = 1 lies at ρ = {1 / per_rho:.3g}{edge} The linear RNN's ratio goes from "
        f"{number(low_linear.ratio)} at ρ = {RHO_MIN:g} to {number(high_linear.ratio)} at {RHO_MAX:g}; tanh's from "
        f"{number(low.ratio)} to {number(high.ratio)}."
    )
