"""The recurrent stack: PyTorch's kernels where they exist, our written-out loop where they don't.

On this CPU only nn.LSTM has a truly fused kernel (3x-20x faster than a Python loop over time);
nn.RNN and nn.GRU loop in C++ at about the speed of a Python loop. So every cell PyTorch has runs
on PyTorch's module, and the variants it lacks (peephole LSTM, sigmoid or linear RNN) run on
`LoopRecurrent`, which names its parameters exactly as nn.LSTM does. Either way `layer_weights`
reads one direction of one layer by those names, which is all the recorder needs.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .cells import GATE_COUNT, LayerWeights, unroll_layer
from .config import ModelConfig

State = Tensor | tuple[Tensor, Tensor]  # h_n, or (h_n, c_n) for the LSTM: each [L*dirs, B, H]


def suffix(layer: int, direction: int) -> str:
    return f"_l{layer}" + ("_reverse" if direction == 1 else "")


class LoopRecurrent(nn.Module):
    """A stacked, optionally bidirectional recurrent layer computed by `unroll_layer`.

    Same call signature, parameter names, state layout and initialisation as nn.LSTM with
    batch_first=True, so the rest of the engine cannot tell it from PyTorch's module.
    """

    def __init__(self, cfg: ModelConfig, input_size: int):
        super().__init__()
        self.arch = cfg.arch
        self.activation = cfg.activation
        self.hidden_size = cfg.hidden_size
        self.num_layers = cfg.num_layers
        self.bidirectional = cfg.bidirectional
        self.dropout = cfg.dropout
        self.peephole = cfg.peephole
        gates_h = GATE_COUNT[cfg.arch] * cfg.hidden_size
        for layer in range(cfg.num_layers):
            layer_input = input_size if layer == 0 else cfg.hidden_size * cfg.num_directions
            for direction in range(cfg.num_directions):
                s = suffix(layer, direction)
                self.register_parameter(f"weight_ih{s}", nn.Parameter(torch.empty(gates_h, layer_input)))
                self.register_parameter(f"weight_hh{s}", nn.Parameter(torch.empty(gates_h, cfg.hidden_size)))
                self.register_parameter(f"bias_ih{s}", nn.Parameter(torch.empty(gates_h)))
                self.register_parameter(f"bias_hh{s}", nn.Parameter(torch.empty(gates_h)))
                if cfg.peephole:
                    for name in ("ci", "cf", "co"):
                        self.register_parameter(f"weight_{name}{s}", nn.Parameter(torch.empty(cfg.hidden_size)))
        bound = 1.0 / math.sqrt(cfg.hidden_size)
        for p in self.parameters():  # nn.LSTM's own default initialisation
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: Tensor, state: State | None = None) -> tuple[Tensor, State]:
        batch = x.shape[0]
        dirs = 2 if self.bidirectional else 1
        zeros = x.new_zeros(self.num_layers * dirs, batch, self.hidden_size)  # [L*dirs, B, H]
        if state is None:
            h0, c0 = zeros, (zeros if self.arch == "lstm" else None)
        else:
            h0, c0 = state if self.arch == "lstm" else (state, None)
        layer_in = x.transpose(0, 1)  # [T, B, D]
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(dirs):
                k = layer * dirs + direction
                trace = unroll_layer(
                    self.arch,
                    layer_weights(self, layer, direction),
                    layer_in,
                    h0[k],
                    c0[k] if c0 is not None else None,
                    activation=self.activation,
                    reverse=direction == 1,
                    keep_gates=False,
                )
                outs.append(trace.h)  # [T, B, H]
                h_n.append(trace.h_last)
                c_n.append(trace.c_last)
            layer_in = torch.cat(outs, dim=2)  # [T, B, dirs*H]
            if self.training and self.dropout > 0 and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout)
        output = layer_in.transpose(0, 1)  # [B, T, dirs*H]
        h_n = torch.stack(h_n)  # [L*dirs, B, H]
        if self.arch == "lstm":
            return output, (h_n, torch.stack(c_n))
        return output, h_n


def make_recurrent(cfg: ModelConfig, input_size: int) -> nn.Module:
    """nn.LSTM / nn.GRU / nn.RNN when PyTorch has the cell, else LoopRecurrent."""
    if not cfg.uses_fused_kernel:
        return LoopRecurrent(cfg, input_size)
    kwargs = dict(
        input_size=input_size,
        hidden_size=cfg.hidden_size,
        num_layers=cfg.num_layers,
        bidirectional=cfg.bidirectional,
        dropout=cfg.dropout,
        batch_first=True,
    )
    if cfg.arch == "lstm":
        return nn.LSTM(**kwargs)
    if cfg.arch == "gru":
        return nn.GRU(**kwargs)
    return nn.RNN(nonlinearity=cfg.activation, **kwargs)


def layer_weights(rnn: nn.Module, layer: int, direction: int) -> LayerWeights:
    """One direction of one layer's parameters, read by nn.LSTM's names."""
    s = suffix(layer, direction)
    peephole = None
    if getattr(rnn, "peephole", False):
        peephole = tuple(getattr(rnn, f"weight_{name}{s}") for name in ("ci", "cf", "co"))
    return LayerWeights(
        w_ih=getattr(rnn, f"weight_ih{s}"),
        w_hh=getattr(rnn, f"weight_hh{s}"),
        b_ih=getattr(rnn, f"bias_ih{s}"),
        b_hh=getattr(rnn, f"bias_hh{s}"),
        peephole=peephole,
    )
