"""Shared cases of the engine tests: every cell, stacked and bidirectional, and an update that overflows."""
import torch

import engine

ARCHES = [
    dict(arch="rnn"),
    dict(arch="rnn", activation="relu"),
    dict(arch="rnn", activation="sigmoid"),
    dict(arch="rnn", activation="linear"),
    dict(arch="lstm"),
    dict(arch="lstm", peephole=True),
    dict(arch="gru"),
]
SHAPES = [dict(num_layers=1, bidirectional=False), dict(num_layers=2, bidirectional=True)]
CASES = [{**a, **s} for a in ARCHES for s in SHAPES]


def case_id(case: dict) -> str:
    return "-".join(f"{v}" if k in ("arch", "activation") else f"{k}={v}" for k, v in case.items())


def double_model(case: dict, task, hidden: int = 6, seed: int = 0):
    """A float64 model: reference comparisons then measure the method, not float32 rounding."""
    torch_seed(seed)
    return engine.build_model(engine.ModelConfig(hidden_size=hidden, **case), task).double()


def torch_seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def overflow_updates(trainer, model) -> None:
    """Make every update of `trainer` write inf into a weight: a finite loss and gradient whose
    step still overflows (the Trainer must roll it back and stop)."""
    real_step = trainer.optimizer.step

    def overflowing_step():
        real_step()
        with torch.no_grad():
            model.head.weight[0, 0] = float("inf")

    trainer.optimizer.step = overflowing_step
