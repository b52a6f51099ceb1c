"""Architectures every recording test runs on: each cell, stacked and bidirectional."""
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
