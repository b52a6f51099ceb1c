"""The cell equations written out, one line per gate, in PyTorch's gate order and notation.

These are the equations on the slide. They serve twice: `unroll_layer` replays a trained layer
on one sample to record its states, gates and gradients, and `LoopRecurrent` (recurrent.py)
trains the variants PyTorch has no kernel for (peephole LSTM, sigmoid and linear RNN).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

GATE_NAMES = {"rnn": (), "lstm": ("i", "f", "g", "o"), "gru": ("r", "z", "n")}
GATE_COUNT = {"rnn": 1, "lstm": 4, "gru": 3}

ACTIVATION_FNS = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "linear": lambda a: a,
}


@dataclass
class LayerWeights:
    """One direction of one layer, named as nn.LSTM names them (weight_ih_l0, ...)."""

    w_ih: Tensor  # [G*H, D]
    w_hh: Tensor  # [G*H, H]
    b_ih: Tensor  # [G*H]
    b_hh: Tensor  # [G*H]
    peephole: tuple[Tensor, Tensor, Tensor] | None = None  # w_ci, w_cf, w_co: each [H]


@dataclass
class LayerTrace:
    """What one direction of one layer did over a sequence, aligned to input positions."""

    h: Tensor  # [T, B, H]
    c: Tensor | None  # [T, B, H], LSTM only
    gates: dict[str, Tensor]  # name -> [T, B, H]
    h_last: Tensor  # [B, H]  state after the last step processed (t=0 for the reverse direction)
    c_last: Tensor | None  # [B, H]


# The equations each step function below computes, as the pages show them (LaTeX), kept beside
# the code so the slide and the code cannot drift apart. PyTorch's names: W_i* act on x_t, W_h* on
# h_{t-1}, each with its own bias; the GRU's reset gate multiplies (W_hn h_{t-1} + b_hn), as nn.GRU
# does (d2l and Cho et al. 2014 put r_t inside, before W_hn).
EQUATIONS = {
    "lstm": r"""\begin{aligned}
i_t &= \sigma(W_{ii} x_t + b_{ii} + W_{hi} h_{t-1} + b_{hi}) && \text{input gate}\\
f_t &= \sigma(W_{if} x_t + b_{if} + W_{hf} h_{t-1} + b_{hf}) && \text{forget gate}\\
g_t &= \tanh(W_{ig} x_t + b_{ig} + W_{hg} h_{t-1} + b_{hg}) && \text{candidate}\\
o_t &= \sigma(W_{io} x_t + b_{io} + W_{ho} h_{t-1} + b_{ho}) && \text{output gate}\\
c_t &= f_t \odot c_{t-1} + i_t \odot g_t && \text{cell state}\\
h_t &= o_t \odot \tanh(c_t)
\end{aligned}""",
    # lstm_step with peepholes: i and f also see c_{t-1}, o sees the new c_t, so o_t comes after c_t.
    "peephole": r"""\begin{aligned}
i_t &= \sigma(W_{ii} x_t + b_{ii} + W_{hi} h_{t-1} + b_{hi} + w_{ci} \odot c_{t-1}) && \text{input gate}\\
f_t &= \sigma(W_{if} x_t + b_{if} + W_{hf} h_{t-1} + b_{hf} + w_{cf} \odot c_{t-1}) && \text{forget gate}\\
g_t &= \tanh(W_{ig} x_t + b_{ig} + W_{hg} h_{t-1} + b_{hg}) && \text{candidate}\\
c_t &= f_t \odot c_{t-1} + i_t \odot g_t && \text{cell state}\\
o_t &= \sigma(W_{io} x_t + b_{io} + W_{ho} h_{t-1} + b_{ho} + w_{co} \odot c_t) && \text{output gate}\\
h_t &= o_t \odot \tanh(c_t)
\end{aligned}""",
    "gru": r"""\begin{aligned}
r_t &= \sigma(W_{ir} x_t + b_{ir} + W_{hr} h_{t-1} + b_{hr}) && \text{reset gate}\\
z_t &= \sigma(W_{iz} x_t + b_{iz} + W_{hz} h_{t-1} + b_{hz}) && \text{update gate}\\
n_t &= \tanh(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn})) && \text{candidate}\\
h_t &= (1 - z_t) \odot n_t + z_t \odot h_{t-1}
\end{aligned}""",
}


def rnn_step(a_x: Tensor, h: Tensor, w: LayerWeights, act) -> Tensor:
    """h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)."""
    return act(a_x + h @ w.w_hh.T + w.b_hh)  # [B, H]


def lstm_step(a_x: Tensor, h: Tensor, c: Tensor, w: LayerWeights):
    """One LSTM step; with peepholes the gates also see the cell state (Gers & Schmidhuber 2000)."""
    a_i, a_f, a_g, a_o = (a_x + h @ w.w_hh.T + w.b_hh).chunk(4, dim=1)  # each [B, H]
    if w.peephole is not None:
        w_ci, w_cf, w_co = w.peephole
        a_i = a_i + w_ci * c
        a_f = a_f + w_cf * c
    i = torch.sigmoid(a_i)  # input gate
    f = torch.sigmoid(a_f)  # forget gate
    g = torch.tanh(a_g)  # candidate cell value
    c_new = f * c + i * g  # [B, H]
    if w.peephole is not None:
        a_o = a_o + w_co * c_new
    o = torch.sigmoid(a_o)  # output gate
    h_new = o * torch.tanh(c_new)  # [B, H]
    return h_new, c_new, (i, f, g, o)


def gru_step(a_x: Tensor, h: Tensor, w: LayerWeights):
    """One GRU step as nn.GRU computes it (the reset gate multiplies W_hn h + b_hn)."""
    x_r, x_z, x_n = a_x.chunk(3, dim=1)  # each [B, H]
    h_r, h_z, h_n = (h @ w.w_hh.T + w.b_hh).chunk(3, dim=1)  # each [B, H]
    r = torch.sigmoid(x_r + h_r)  # reset gate
    z = torch.sigmoid(x_z + h_z)  # update gate
    n = torch.tanh(x_n + r * h_n)  # candidate state
    h_new = (1 - z) * n + z * h  # [B, H]
    return h_new, (r, z, n)


def unroll_layer(
    arch: str,
    w: LayerWeights,
    inputs: Tensor,  # [T, B, D]
    h0: Tensor,  # [B, H]
    c0: Tensor | None = None,  # [B, H], LSTM only
    *,
    activation: str = "tanh",
    reverse: bool = False,
    taps: Tensor | None = None,  # [T, B, H]: added to h_t, so dL/d(taps)[t] is dL/dh_t
    keep_gates: bool = True,
    real: Tensor | None = None,  # [T, B] bool: False at a pad step; None = every step is data
) -> LayerTrace:
    """Run one direction of one layer over a sequence with the written-out equations.

    The input projections of all steps are one matmul up front; the loop iterates with
    unbind(0), because indexing x[t] makes backward allocate a full-size zero tensor per step.
    A zero `taps` tensor that requires grad makes the total BPTT gradient dL/dh_t (through
    every later step and every upper layer) the gradient of the loss with respect to taps[t],
    with nothing retained by hand.

    At a pad step (real False) the state is carried through unchanged, h_t = h_{t-1} and
    c_t = c_{t-1}, which is what PyTorch's kernels compute on a packed sequence (padding.py):
    each sample's forward direction stops at its last real step and its backward direction
    starts there. Its gates are still computed from the pad, and used for nothing.
    """
    a_x = (inputs @ w.w_ih.T + w.b_ih).unbind(0)  # T x [B, G*H]
    tap_steps = taps.unbind(0) if taps is not None else None
    keep = real[:, :, None].unbind(0) if real is not None else None  # T x [B, 1]
    order = range(len(a_x) - 1, -1, -1) if reverse else range(len(a_x))
    act = ACTIVATION_FNS[activation]
    h, c = h0, c0
    hs, cs, gate_steps = {}, {}, {}
    for t in order:
        h_prev, c_prev = h, c
        if arch == "lstm":
            h, c, gates = lstm_step(a_x[t], h, c, w)
        elif arch == "gru":
            h, gates = gru_step(a_x[t], h, w)
        else:
            h, gates = rnn_step(a_x[t], h, w, act), ()
        if keep is not None:  # a pad step: the state goes through it unchanged
            h = torch.where(keep[t], h, h_prev)  # [B, H]
            c = torch.where(keep[t], c, c_prev) if c is not None else None  # [B, H]
        cs[t] = c
        if tap_steps is not None:
            h = h + tap_steps[t]
        hs[t] = h
        if keep_gates:
            gate_steps[t] = gates
    steps = range(len(a_x))
    gates = {}
    if keep_gates:
        for k, name in enumerate(GATE_NAMES[arch]):
            gates[name] = torch.stack([gate_steps[t][k] for t in steps])  # [T, B, H]
    return LayerTrace(
        h=torch.stack([hs[t] for t in steps]),  # [T, B, H]
        c=torch.stack([cs[t] for t in steps]) if arch == "lstm" else None,  # [T, B, H]
        gates=gates,
        h_last=h,
        c_last=c,
    )
