"""What one session may ask of a CPU that a whole class shares: the size of one training step.

Checked on the one install step (lab.py) that every path into a session goes through (the form,
a link, a lesson, an uploaded checkpoint, a comparison), before anything is built.
"""
from __future__ import annotations

import engine
from app.session.link import Setup

# One training step keeps batch x steps x units x layers x directions activations; past this many
# a step takes seconds on a 2-core CPU and a class sharing one server would stall.
MAX_STEP_COST = 2**24


def step_cost(setup: Setup, task: engine.Task) -> tuple[int, int]:
    """(activations one training step keeps, time steps it runs)."""
    x, _ = task.batch(1)
    steps = x.shape[1] if x.dim() > 1 else task.spec.out_len
    if task.spec.mapping == "encdec":
        steps += task.spec.out_len
    cfg = setup.model
    return setup.train.batch_size * steps * cfg.hidden_size * cfg.num_layers * cfg.num_directions, steps


def check_cost(setup: Setup, task: engine.Task) -> None:
    """ValueError when one training step of this setup would be too heavy for a shared CPU."""
    cost, steps = step_cost(setup, task)
    if cost > MAX_STEP_COST:
        cfg = setup.model
        raise ValueError(
            f"one step would process batch {setup.train.batch_size} x {steps} steps x {cfg.hidden_size} "
            f"units x {cfg.num_layers * cfg.num_directions} layer-directions = {cost:,} activations, over "
            f"this app's limit of {MAX_STEP_COST:,} for a shared CPU; lower the batch size, the sequence "
            "length or the hidden size"
        )
