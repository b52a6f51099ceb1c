"""Initialisation schemes for the recurrent weights: the lesson is that the start decides a lot.

Every scheme acts on each gate block of W_hh separately ([H, H] each), because each block is the
recurrent matrix that gate multiplies h_{t-1} by.
"""
from __future__ import annotations

import torch
from torch import nn

from .cells import GATE_COUNT
from .config import ModelConfig
from .recurrent import layer_weights


def spectral_radius(matrix: torch.Tensor) -> float:
    return torch.linalg.eigvals(matrix).abs().max().item()


def init_block(block: torch.Tensor, cfg: ModelConfig) -> None:
    """Re-initialise one [H, H] block of W_hh in place."""
    if cfg.init == "orthogonal":
        nn.init.orthogonal_(block)
    elif cfg.init == "identity":
        block.copy_(torch.eye(block.shape[0]))
    elif cfg.init == "scaled":
        radius = spectral_radius(block)
        if radius > 0:
            block.mul_(cfg.spectral_radius / radius)


@torch.no_grad()
def initialise(rnn: nn.Module, cfg: ModelConfig) -> None:
    """Apply cfg.init and cfg.forget_bias to every layer and direction of `rnn`."""
    hidden = cfg.hidden_size
    for layer in range(cfg.num_layers):
        for direction in range(cfg.num_directions):
            w = layer_weights(rnn, layer, direction)
            if cfg.init != "default":
                for gate in range(GATE_COUNT[cfg.arch]):
                    init_block(w.w_hh[gate * hidden : (gate + 1) * hidden], cfg)
            if cfg.init == "identity":  # IRNN: identity recurrence and zero bias
                w.b_ih.zero_()
                w.b_hh.zero_()
            if cfg.forget_bias is not None:
                forget = slice(hidden, 2 * hidden)  # PyTorch's gate order is i, f, g, o
                w.b_ih[forget] = cfg.forget_bias
                w.b_hh[forget] = 0.0
