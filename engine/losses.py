"""Losses and metrics by name, shared by tasks and the recorder (which has no task in hand).

Targets of classification tasks are class indices; -100 marks a position with no target
(PyTorch's ignore_index), e.g. padding.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

IGNORE = -100
LOSSES = ("mse", "ce")


def compute_loss(kind: str, y_hat: Tensor, y: Tensor) -> Tensor:
    """Mean loss. mse: y_hat and y same shape. ce: y_hat [..., C] logits, y [...] class indices."""
    if kind == "mse":
        return F.mse_loss(y_hat, y)
    return F.cross_entropy(y_hat.reshape(-1, y_hat.shape[-1]), y.reshape(-1), ignore_index=IGNORE)


@torch.no_grad()
def compute_metric(kind: str, y_hat: Tensor, y: Tensor) -> float:
    """ce: accuracy over positions with a target. mse: R^2 = 1 - MSE / Var(y), so 0 is the
    score of always predicting the mean (the "trivial predictor" of the adding problem)."""
    if kind == "mse":
        var = y.var(unbiased=False)
        return (1.0 - F.mse_loss(y_hat, y) / var).item() if var > 0 else float("nan")
    mask = y != IGNORE
    correct = (y_hat.argmax(dim=-1) == y) & mask
    return (correct.sum() / mask.sum().clamp(min=1)).item()


@torch.no_grad()
def sequence_accuracy(y_hat: Tensor, y: Tensor) -> float:
    """Share of samples with every target token right: y_hat [B, T_out, C] logits, y [B, T_out]."""
    right = (y_hat.argmax(dim=-1) == y) | (y == IGNORE)  # [B, T_out]
    return right.all(dim=1).float().mean().item()


METRIC_NAMES = {"mse": "R²", "ce": "accuracy"}
