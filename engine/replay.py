"""Replaying a recurrent stack through the written-out equations, with taps on every h_t.

A model's `replay` method runs each of its recurrent stacks (one for a SequenceModel; encoder and
decoder for an EncoderDecoder) through `replay_stack` and says what each stack read and started
from, so the recorder can open every stack the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor, nn

from .cells import LayerTrace
from .config import ModelConfig
from .recurrent import State, final_state, replay_stack


class Taps:
    """Zero tensors added to every h_t of a replay. The gradient of the loss with respect to a
    stack's taps, [L, dirs, T, B, H], is dL/dh_t: the total BPTT gradient, through every later
    step and every upper layer."""

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
    padded: Tensor | None = None  # [B, T]  True at a pad step (carried through); None: no pads

    def final_state(self) -> State:
        """h_n (and c_n), nn.LSTM's layout: [L*dirs, B, H]."""
        return final_state(self.cfg, self.traces)


@dataclass
class Replay:
    y_hat: Tensor
    stacks: dict[str, StackReplay]  # a transformer's: BlockStackReplay (engine/hooks.py)
    attention: dict = field(default_factory=dict)  # Site (engine/sites.py) -> Attended (engine/attention.py)


def run_stack(name: str, cfg: ModelConfig, rnn: nn.Module, x_in: Tensor, taps: Taps | None, state=None,
              padded: Tensor | None = None):
    """replay_stack with this stack's taps made on the way; returns (StackReplay, output).
    padded [B, T]: True at the pad steps of x_in, which the stack carries its state through."""
    stack_taps = taps.make(name, cfg, x_in) if taps is not None else None
    traces, out = replay_stack(cfg, rnn, x_in, stack_taps, state, padded=padded)
    return StackReplay(cfg, rnn, x_in, state, traces, padded), out
