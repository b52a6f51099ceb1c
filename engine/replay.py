"""Replaying a recurrent stack with taps on every h_t: through the written-out equations, or an
nn.LSTM's or nn.RNN's own kernel.

A model's `replay` method runs each of its recurrent stacks (one for a SequenceModel; encoder and
decoder for an EncoderDecoder) through `run_stack` and says what each stack read and started
from, so the recorder can open every stack the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from torch import Tensor, nn

from .cells import LayerTrace
from .config import ModelConfig
from .fused_replay import fused_stack, records_fused
from .recurrent import State, final_state, replay_stack


class Taps:
    """Zero tensors added to every h_t of a replay. The gradient of the loss with respect to a
    stack's taps, [L, dirs, T, B, H], is dL/dh_t: the total BPTT gradient, through every later
    step and every upper layer.

    They also say how the replay runs, since they are what a model's replay passes down to each of
    its stacks: an nn.LSTM or nn.RNN stack through its own kernel (fused_replay.py), unless
    written_out, which takes the written-out equations for every stack (the reference)."""

    def __init__(self, written_out: bool = False) -> None:
        self.by_stack: dict[str, Tensor] = {}
        self.written_out = written_out

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


def replay_any(cfg: ModelConfig, rnn: nn.Module, x_in: Tensor, stack_taps: Tensor | None, state: State | None,
               padded: Tensor | None, written_out: bool) -> tuple[list[list[LayerTrace]], Tensor]:
    """replay_stack's traces and output, from nn.LSTM's or nn.RNN's own kernel where it applies."""
    if not written_out and records_fused(rnn, padded):
        return fused_stack(cfg, rnn, x_in, stack_taps, state)
    return replay_stack(cfg, rnn, x_in, stack_taps, state, padded=padded)


def run_stack(name: str, cfg: ModelConfig, rnn: nn.Module, x_in: Tensor, taps: Taps | None, state=None,
              padded: Tensor | None = None):
    """A stack replayed with its taps made on the way; returns (StackReplay, output).
    padded [B, T]: True at the pad steps of x_in, which the stack carries its state through."""
    stack_taps = taps.make(name, cfg, x_in) if taps is not None else None
    written_out = taps.written_out if taps is not None else False
    traces, out = replay_any(cfg, rnn, x_in, stack_taps, state, padded, written_out)
    return StackReplay(cfg, rnn, x_in, state, traces, padded), out
