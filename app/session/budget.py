"""What one session may ask of a CPU that a whole class shares: the size of one training step, and
the memory its models hold (app/session/memory.py).

Checked on the one install step (lab.py) that every path into a session goes through (the form,
a link, a lesson, an uploaded checkpoint, a comparison), before anything is built.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn

import engine
from app.session.link import Setup
from app.session.memory import LEDGER
from engine.build import build_model
from engine.tasks.base import DECODERS

# One training step keeps batch x steps x units x layers x directions activations (a transformer's
# block: d_model + d_ff + heads x steps, its attention maps growing with the square); past this many
# a step takes seconds on a 2-core CPU and a class sharing one server would stall.
MAX_STEP_COST = 2**24
# Weights a lab holds four times over (the weights, Adam's two moments, the best step's copy):
# 5M parameters is 80 MB a lab, 5 GB for a class of 60; the largest preset has 108k.
MAX_PARAMETERS = 5_000_000
# Bytes a trained parameter holds: four float32 copies (memory.weights_bytes).
HELD_PER_PARAMETER = 4 * 4
# Arithmetic of one step, about 6 x batch x steps x parameters (forward and backward): 1e10 is
# about half a second on one core; the heaviest preset (charlm) needs 2e9.
MAX_STEP_FLOPS = 1e10
# A cell PyTorch has no kernel for (layer norm, peepholes, zoneout: engine's written-out loop) runs
# Python once per step, layer and direction, forward and backward: 0.87-1.03 ms an iteration measured
# at batch 1 (an LSTM of 8 units, load 2) on an Intel Xeon, whatever its size; on an AMD EPYC the largest
# link once accepted (1,500 iterations) took 1.9-2.0 s a step, 1.3 ms an iteration (issue 43). 1,100
# iterations is a step of at most about 1.5 s on either; the layer-norm lesson's needs 50. T = 2000 x 8
# layers x 2 directions took 12-14 s a step.
MAX_LOOP_STEPS = 1_100
# What one step of a recurrent layer keeps per unit and time step, for backpropagation: h_t; a GRU's
# r, z and n gates too; an LSTM's i, f, g, o and c_t.
KEPT_PER_UNIT = {"rnn": 1, "gru": 4, "lstm": 6}


def step_cost(setup: Setup, task: engine.Task) -> tuple[int, int]:
    """(activations one training step keeps, time steps it runs), from the task's sizes: no sample is
    drawn, so a model opened from its checkpoint before its corpus is here is priced too. A vec2seq
    task's one input vector runs for its output's steps (a drawn sample's [B, features] was once read
    as features steps)."""
    steps = task.spec.out_len if task.spec.mapping == "vec2seq" else task.source_len
    if task.spec.mapping in DECODERS:
        steps += task.spec.out_len
    cfg = setup.model
    per_step = cfg.hidden_size * cfg.num_directions * KEPT_PER_UNIT.get(cfg.arch, 1)
    if cfg.arch == "transformer":  # each block also keeps its feed-forward layer and every head's T x T map
        per_step = cfg.hidden_size + cfg.feedforward_size + cfg.num_heads * steps
    return setup.train.batch_size * steps * per_step * cfg.num_layers, steps


def parameters(setup: Setup, task: engine.Task) -> tuple[int, int]:
    """The network's parameter count, and how many of them a step computes with (all but its embeddings'
    rows, which are looked up: a translator's 20,000 words are a third of its weights), found without
    allocating it (the meta device). Built with PyTorch's default start: the count does not depend on it,
    and rescaling W_hh to a spectral radius (init="scaled") reads eigenvalues, which a meta tensor has none of."""
    unscaled = dataclasses.replace(setup.model, init="default", spectral_radius=None)
    with torch.device("meta"):
        model = build_model(unscaled, task.spec)
    count = sum(p.numel() for p in model.parameters())
    looked_up = sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Embedding))
    return count, count - looked_up


def check_cost(setup: Setup, task: engine.Task) -> None:
    """ValueError when the network would be too big, or one training step too heavy, for a CPU a
    class shares: its batch's memory (the engine's limit), its activations, its parameters and its
    arithmetic, each within its limit; memory.MemoryFull when its weights and data would take its
    session or the process past their memory."""
    count = price(setup, task)
    LEDGER.check_room(HELD_PER_PARAMETER * count + task.held_bytes(), "this network")


def price(setup: Setup, task: engine.Task) -> int:
    """check_cost's limits on one network and its step, the memory aside; returns its parameter count."""
    task.check_batch(setup.train.batch_size)  # recall's one-hot inputs grow with the symbols, not the units
    cost, steps = step_cost(setup, task)
    cfg = setup.model
    if cost > MAX_STEP_COST:
        kept = KEPT_PER_UNIT.get(cfg.arch, 1)
        per_step = (f"({cfg.hidden_size} d_model + {cfg.feedforward_size} d_ff + {cfg.num_heads} heads x {steps} "
                    f"positions) x {cfg.num_layers} blocks" if cfg.arch == "transformer" else
                    f"{cfg.hidden_size} units{f' x {kept} values kept ({cfg.arch.upper()})' if kept > 1 else ''} "
                    f"x {cfg.num_layers * cfg.num_directions} layer-directions")
        raise ValueError(
            f"one step would process batch {setup.train.batch_size} x {steps} steps x {per_step} = {cost:,} "
            f"activations, over this app's limit of {MAX_STEP_COST:,} for a shared CPU; lower the batch size, "
            "the sequence length or the hidden size"
        )
    loops = steps * cfg.num_layers * cfg.num_directions
    if cfg.arch != "transformer" and not cfg.uses_fused_kernel and loops > MAX_LOOP_STEPS:
        raise ValueError(
            f"this cell (layer norm, peepholes or zoneout) runs a Python loop once per step, layer and direction: "
            f"{steps} steps x {cfg.num_layers * cfg.num_directions} layer-directions = {loops:,} a training step, "
            f"over this app's limit of {MAX_LOOP_STEPS:,} for a shared CPU (each takes about a millisecond); "
            "lower the sequence length or the number of layers, or use a cell without them"
        )
    count, computed = parameters(setup, task)
    if count > MAX_PARAMETERS:
        raise ValueError(
            f"this network has {count:,} parameters, over this app's limit of {MAX_PARAMETERS:,} for a "
            "shared CPU; lower the hidden size or the number of layers"
        )
    flops = 6 * setup.train.batch_size * steps * computed
    if flops > MAX_STEP_FLOPS:
        raise ValueError(
            f"one step would take about {flops:.1e} operations (6 x batch {setup.train.batch_size} x {steps} "
            f"steps x {computed:,} parameters computed, the embeddings looked up), over this app's limit of "
            f"{MAX_STEP_FLOPS:.0e} for a shared CPU; lower the batch size, the sequence length or the hidden size"
        )
    return count


def check_runs(setups: dict[str, Setup], task: engine.Task) -> None:
    """check_cost for each of runs trained side by side (one step each in turn, so a step costs
    one run's), and their weights together within MAX_PARAMETERS and the memory, since all are held
    at once. The ValueError names the run."""
    counts = {}
    for name, setup in setups.items():
        try:
            counts[name] = price(setup, task)
        except ValueError as err:
            raise ValueError(f"the {name} run: {err}") from None
    total = sum(counts.values())
    if total > MAX_PARAMETERS:
        each = ", ".join(f"{name} {count:,}" for name, count in counts.items())
        raise ValueError(f"these runs have {total:,} parameters together ({each}), over this app's limit of "
                         f"{MAX_PARAMETERS:,} for a shared CPU; lower the hidden size or the number of layers")
    LEDGER.check_room(HELD_PER_PARAMETER * total + task.held_bytes(), f"these {len(setups)} runs")
