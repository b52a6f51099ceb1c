"""The recurrent stack: PyTorch's kernels where they exist, our written-out loop where they don't.

On this CPU only nn.LSTM has a truly fused kernel (3x-20x faster than a Python loop over time);
nn.RNN and nn.GRU loop in C++ at about the speed of a Python loop. So every cell PyTorch has runs
on PyTorch's module, and the variants it lacks (peephole LSTM, sigmoid or linear RNN, layer
normalisation, zoneout) run on
`LoopRecurrent`, which names its parameters exactly as nn.LSTM does. Either way `layer_weights`
reads one direction of one layer by those names, which is all the recorder needs.

Every model runs its stacks through `run_recurrent`, which takes the batch's padding: pads are
skipped by packing on PyTorch's modules and carried through in the written-out loop (padding.py).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .cells import GATE_COUNT, LayerNorms, LayerTrace, LayerWeights, unroll_layer
from .config import ModelConfig
from .padding import State, real_steps, run_compacted, run_packed


def suffix(layer: int, direction: int) -> str:
    return f"_l{layer}" + ("_reverse" if direction == 1 else "")


class LoopRecurrent(nn.Module):
    """A stacked, optionally bidirectional recurrent layer computed by `unroll_layer`.

    Same call signature, parameter names, state layout and initialisation as nn.LSTM with
    batch_first=True, so the rest of the engine cannot tell it from PyTorch's module. A
    layer-normalised cell adds gain_ih and gain_hh ([G*H], ones) per layer and direction, and an
    LSTM gain_c and bias_c ([H], ones and zeros), as Ba et al. start them; nothing is drawn for
    them, so the other weights start as without layer_norm.
    """

    def __init__(self, cfg: ModelConfig, input_size: int):
        super().__init__()
        self.cfg = cfg
        self.peephole = cfg.peephole  # read by layer_weights, as on PyTorch's modules (absent: False)
        self.layer_norm = cfg.layer_norm  # the same
        self.zoneout = cfg.zoneout  # the same (absent: 0)
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
        if cfg.layer_norm:
            for layer in range(cfg.num_layers):
                for direction in range(cfg.num_directions):
                    self.add_norms(suffix(layer, direction), gates_h)

    def add_norms(self, s: str, gates_h: int) -> None:
        """One direction of one layer's layer-norm gains (and the LSTM's LN(c_t) bias)."""
        self.register_parameter(f"gain_ih{s}", nn.Parameter(torch.ones(gates_h)))
        self.register_parameter(f"gain_hh{s}", nn.Parameter(torch.ones(gates_h)))
        if self.cfg.arch == "lstm":
            self.register_parameter(f"gain_c{s}", nn.Parameter(torch.ones(self.cfg.hidden_size)))
            self.register_parameter(f"bias_c{s}", nn.Parameter(torch.zeros(self.cfg.hidden_size)))

    def forward(self, x: Tensor, state: State | None = None, padded: Tensor | None = None) -> tuple[Tensor, State]:
        """x: [B, T, D] -> output [B, T, dirs*H] and the final state, as nn.LSTM returns them;
        padded [B, T] (True at a pad) as run_recurrent takes it."""
        dropout = self.cfg.dropout if self.training else 0.0
        traces, output = replay_stack(self.cfg, self, x, None, state, keep_gates=False, dropout=dropout,
                                      padded=padded, training=self.training)
        return output, final_state(self.cfg, traces)


def run_recurrent(rnn: nn.Module, x_in: Tensor, state: State | None = None, padded: Tensor | None = None,
                  *, final: bool = True) -> tuple[Tensor, State | None]:
    """A recurrent stack on x_in [B, T, D]: output [B, T, dirs*H] and final state, with the pad
    steps of padded [B, T] (True at a pad) read as no data: each sample's final state is the one
    after its last real step, and a pad step's output is the state carried through it. A batch
    without pads takes the module's plain call, as before padding was known.

    final=False: the caller reads the output only (a SequenceModel's forward pass), so a
    unidirectional PyTorch module runs its plain fused call on the real steps moved to the front
    (padding.run_compacted) and returns None for the state. nn.LSTM on a packed sequence
    leaves oneDNN's fused kernel: a training step of the sentiment preset measured 2.8x the
    plain call packed and 1.1x compacted. A bidirectional stack, and one whose final state is
    read (an encoder, truncated BPTT), are packed (a dates preset step: 1.8x)."""
    if real_steps(padded) is None:
        return rnn(x_in, state)
    if isinstance(rnn, LoopRecurrent):
        return rnn(x_in, state, padded)
    if not final and not rnn.bidirectional:
        return run_compacted(rnn, x_in, padded, state), None
    return run_packed(rnn, x_in, padded, state)


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
    """One direction of one layer's parameters, read by nn.LSTM's names, with its zoneout rate."""
    s = suffix(layer, direction)
    peephole = norms = None
    if getattr(rnn, "peephole", False):
        peephole = tuple(getattr(rnn, f"weight_{name}{s}") for name in ("ci", "cf", "co"))
    if getattr(rnn, "layer_norm", False):
        norms = LayerNorms(getattr(rnn, f"gain_ih{s}"), getattr(rnn, f"gain_hh{s}"),
                           getattr(rnn, f"gain_c{s}", None), getattr(rnn, f"bias_c{s}", None))
    return LayerWeights(
        w_ih=getattr(rnn, f"weight_ih{s}"),
        w_hh=getattr(rnn, f"weight_hh{s}"),
        b_ih=getattr(rnn, f"bias_ih{s}"),
        b_hh=getattr(rnn, f"bias_hh{s}"),
        peephole=peephole,
        norms=norms,
        zoneout=getattr(rnn, "zoneout", 0.0),
    )


def initial_state(cfg: ModelConfig, state: State | None, k: int, like: Tensor) -> tuple[Tensor, Tensor | None]:
    """h0 and c0 ([B, H] each) of layer-direction k (= layer * dirs + direction), from a stack's
    initial state in nn.LSTM's layout, or zeros."""
    if state is None:
        zeros = like.new_zeros(like.shape[0], cfg.hidden_size)  # [B, H]
        return zeros, (zeros if cfg.arch == "lstm" else None)
    if cfg.arch == "lstm":
        return state[0][k], state[1][k]
    return state[k], None


def replay_stack(
    cfg: ModelConfig,
    rnn: nn.Module,
    x_in: Tensor,  # [B, T, D]
    taps: Tensor | None = None,  # [L, dirs, T, B, H]
    state: State | None = None,
    *,
    keep_gates: bool = True,
    dropout: float = 0.0,
    padded: Tensor | None = None,  # [B, T] True at a pad step
    training: bool = False,  # zoneout draws its masks (else its expectation)
) -> tuple[list[list[LayerTrace]], Tensor]:
    """Run a whole recurrent stack (every layer, both directions) with unroll_layer, on the
    weights of `rnn` (an nn.LSTM/GRU/RNN or a LoopRecurrent). Returns traces[layer][direction]
    and the stack's output [B, T, dirs*H], exactly what run_recurrent outputs: every layer
    carries its state through the pad steps, so an upper layer ignores what a lower one put there."""
    layer_in = x_in.transpose(0, 1)  # [T, B, D]
    real = real_steps(padded)  # [T, B] or None
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
                    keep_gates=keep_gates,
                    real=real,
                    training=training,
                )
            )
        traces.append(row)
        layer_in = torch.cat([trace.h for trace in row], dim=2)  # [T, B, dirs*H]
        if dropout > 0 and layer < cfg.num_layers - 1:  # between layers, as nn.LSTM applies it
            layer_in = F.dropout(layer_in, dropout)
    return traces, layer_in.transpose(0, 1)  # [B, T, dirs*H]


def final_state(cfg: ModelConfig, traces: list[list[LayerTrace]]) -> State:
    """h_n (and c_n) in nn.LSTM's layout: [L*dirs, B, H]."""
    last = [trace for row in traces for trace in row]
    h_n = torch.stack([t.h_last for t in last])
    if cfg.arch == "lstm":
        return h_n, torch.stack([t.c_last for t in last])
    return h_n
