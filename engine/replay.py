"""Replaying a recurrent stack through the written-out equations, with taps on every h_t.

A model's `replay` method runs each of its recurrent stacks (one for a SequenceModel; encoder and
decoder for an EncoderDecoder) through `replay_stack` and says what each stack read and started
from, so the recorder can open every stack the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .cells import LayerTrace, unroll_layer
from .config import ModelConfig
from .recurrent import State, layer_weights


class Taps:
    """Zero tensors added to every h_t of a replay. After backward, taps.grad[..., t, :, :] is
    dL/dh_t: the total BPTT gradient, through every later step and every upper layer."""

    def __init__(self) -> None:
        self.by_stack: dict[str, Tensor] = {}

    def make(self, name: str, cfg: ModelConfig, x_in: Tensor) -> Tensor:
        batch, T = x_in.shape[:2]
        taps = x_in.new_zeros(cfg.num_layers, cfg.num_directions, T, batch, cfg.hidden_size)  # [L, dirs, T, B, H]
        self.by_stack[name] = taps.requires_grad_()
        return taps


@dataclass
class StackReplay:
    """One recurrent stack as replayed: its config and module, what it read, where it started."""

    cfg: ModelConfig
    rnn: nn.Module
    x_in: Tensor  # [B, T, D]  the first layer's input
    state: State | None  # initial state, nn.LSTM layout; None = zeros
    traces: list[list[LayerTrace]]  # [layer][direction]

    def final_state(self) -> State:
        """h_n (and c_n), nn.LSTM's layout: [L*dirs, B, H]."""
        last = [trace for row in self.traces for trace in row]
        h_n = torch.stack([t.h_last for t in last])
        if self.cfg.arch == "lstm":
            return h_n, torch.stack([t.c_last for t in last])
        return h_n


@dataclass
class Replay:
    y_hat: Tensor
    stacks: dict[str, StackReplay]


def initial_state(cfg: ModelConfig, state: State | None, k: int, like: Tensor) -> tuple[Tensor, Tensor | None]:
    """h0 and c0 ([B, H] each) of layer-direction k, from a stack's initial state or zeros."""
    if state is None:
        zeros = like.new_zeros(like.shape[0], cfg.hidden_size)  # [B, H]
        return zeros, (zeros if cfg.arch == "lstm" else None)
    if cfg.arch == "lstm":
        return state[0][k], state[1][k]
    return state[k], None


def replay_stack(
    cfg: ModelConfig, rnn: nn.Module, x_in: Tensor, taps: Tensor | None, state: State | None = None
) -> tuple[list[list[LayerTrace]], Tensor]:
    """Run a recurrent stack with unroll_layer. x_in: [B, T, D]; taps: [L, dirs, T, B, H].
    Returns traces[layer][direction] and the stack's output [B, T, dirs*H]."""
    layer_in = x_in.transpose(0, 1)  # [T, B, D]
    traces = []
    for layer in range(cfg.num_layers):
        row = []
        for direction in range(cfg.num_directions):
            h0, c0 = initial_state(cfg, state, layer * cfg.num_directions + direction, x_in)
            row.append(
                unroll_layer(
                    cfg.arch,
                    layer_weights(rnn, layer, direction),
                    layer_in,
                    h0,
                    c0,
                    activation=cfg.activation,
                    reverse=direction == 1,
                    taps=taps[layer, direction] if taps is not None else None,
                )
            )
        traces.append(row)
        layer_in = torch.cat([trace.h for trace in row], dim=2)  # [T, B, dirs*H]
    return traces, layer_in.transpose(0, 1)  # [B, T, dirs*H]


def run_stack(name: str, cfg: ModelConfig, rnn: nn.Module, x_in: Tensor, taps: Taps | None, state=None):
    """replay_stack with this stack's taps made on the way; returns (StackReplay, output)."""
    stack_taps = taps.make(name, cfg, x_in) if taps is not None else None
    traces, out = replay_stack(cfg, rnn, x_in, stack_taps, state)
    return StackReplay(cfg, rnn, x_in, state, traces), out
