"""The cell equations written out, one line per gate, in PyTorch's gate order and notation.

These are the equations on the slide. They serve twice: `unroll_layer` replays a trained layer
on one sample to record its states, gates and gradients, and `LoopRecurrent` (recurrent.py)
trains the variants PyTorch has no kernel for (peephole LSTM, sigmoid and linear RNN, layer
normalisation, zoneout).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
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
    norms: LayerNorms | None = None  # the gains of a layer-normalised cell
    zoneout: float = 0.0  # the layer's zoneout rate: a setting, carried here so every replay applies it


@dataclass
class LayerNorms:
    """The learned gains (and the cell state's bias) of a layer-normalised cell (Ba et al. 2016).

    The input side's LN has gain gain_ih and bias b_ih, the recurrent side's gain_hh and b_hh:
    PyTorch's two biases are the two LNs' biases (Ba et al.'s separate b would be their sum again).
    """

    gain_ih: Tensor  # [G*H]
    gain_hh: Tensor  # [G*H]
    gain_c: Tensor | None = None  # [H], LSTM only: LN(c_t) before tanh
    bias_c: Tensor | None = None  # [H]


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
    # layer_norm=True (Ba, Kiros & Hinton 2016), any cell: every W x_t and W h_{t-1} of a gate above
    # becomes its LN, statistics per sample over that gate's H units; the b's are the LNs' biases.
    # f_t, g_t, o_t (and the GRU's gates) alike: the page says so beside it (at 1024 px a note in the
    # equation ran off the right edge).
    # The LSTM also normalises c_t before the tanh of h_t (c_t itself is carried unnormalised).
    "layer_norm": r"""\begin{aligned}
\mathrm{LN}(a; \gamma, \beta) &= \gamma \odot \frac{a - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta\\
\mu &= \tfrac{1}{H} \textstyle\sum_j a_j, \quad \sigma^2 = \tfrac{1}{H} \sum_j (a_j - \mu)^2\\
i_t &= \sigma(\mathrm{LN}(W_{ii} x_t; \gamma_{ii}, b_{ii}) + \mathrm{LN}(W_{hi} h_{t-1}; \gamma_{hi}, b_{hi}))\\
c_t &= f_t \odot c_{t-1} + i_t \odot g_t\\
h_t &= o_t \odot \tanh(\mathrm{LN}(c_t; \gamma_c, \beta_c))
\end{aligned}""",
    # zoneout > 0 (Krueger et al. 2017), any cell: \tilde h_t is the cell's new state above. Training
    # draws m_t per unit and step (and an independent mask for the LSTM's c_t, at the same rate p);
    # evaluation and every recording use the expectation.
    "zoneout": r"""\begin{aligned}
h_t &= m_t \odot h_{t-1} + (1 - m_t) \odot \tilde h_t, \quad m_t \sim \mathrm{Bernoulli}(p)
  && \text{training}\\
h_t &= p \, h_{t-1} + (1 - p) \, \tilde h_t && \text{evaluation}
\end{aligned}""",
}

LN_EPS = 1e-5  # nn.LayerNorm's


def normalise(a: Tensor, blocks: int) -> Tensor:
    """(a - mu) / sqrt(sigma^2 + eps) per sample and per gate block of H units: [..., G*H] -> [..., G*H]."""
    split = a.unflatten(-1, (blocks, -1))  # [..., G, H]
    return F.layer_norm(split, split.shape[-1:], eps=LN_EPS).flatten(-2)  # [..., G*H]


def input_side(inputs: Tensor, w: LayerWeights) -> Tensor:
    """W_ih x_t + b_ih, or LN(W_ih x_t; gain_ih, b_ih), for every step at once: [T, B, D] -> [T, B, G*H]."""
    a = inputs @ w.w_ih.T  # [T, B, G*H]
    if w.norms is not None:
        a = w.norms.gain_ih * normalise(a, w.w_ih.shape[0] // w.w_hh.shape[1])  # [T, B, G*H]
    return a + w.b_ih  # [T, B, G*H]


def recurrent_side(h: Tensor, w: LayerWeights) -> Tensor:
    """W_hh h_{t-1} + b_hh, or LN(W_hh h_{t-1}; gain_hh, b_hh): [B, H] -> [B, G*H]."""
    a = h @ w.w_hh.T  # [B, G*H]
    if w.norms is not None:
        a = w.norms.gain_hh * normalise(a, w.w_hh.shape[0] // w.w_hh.shape[1])  # [B, G*H]
    return a + w.b_hh  # [B, G*H]


def zoneout_masks(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """m ~ Bernoulli(p) per unit (True: the unit keeps its previous value), drawn from torch's global
    generator, which a Trainer makes its private dropout stream while it trains: [T, B, H]."""
    return torch.rand(shape, dtype=like.dtype, device=like.device) < p  # [T, B, H]


def zone(new: Tensor, old: Tensor, p: float, mask: Tensor | None) -> Tensor:
    """Zoneout of one state: where(m, old, new) in training, p old + (1 - p) new at evaluation. [B, H]."""
    if mask is not None:
        return torch.where(mask, old, new)  # [B, H]
    return p * old + (1 - p) * new  # [B, H]


def rnn_step(a_x: Tensor, h: Tensor, w: LayerWeights, act) -> Tensor:
    """h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), each side its LN with layer_norm; a_x is
    input_side's step."""
    return act(a_x + recurrent_side(h, w))  # [B, H]


def lstm_step(a_x: Tensor, h: Tensor, c: Tensor, w: LayerWeights):
    """One LSTM step; with peepholes the gates also see the cell state (Gers & Schmidhuber 2000),
    added after the layer norms; with layer norms h_t = o_t * tanh(LN(c_t; gain_c, bias_c))."""
    a_i, a_f, a_g, a_o = (a_x + recurrent_side(h, w)).chunk(4, dim=1)  # each [B, H]
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
    shown = c_new if w.norms is None else w.norms.gain_c * normalise(c_new, 1) + w.norms.bias_c  # [B, H]
    h_new = o * torch.tanh(shown)  # [B, H]
    return h_new, c_new, (i, f, g, o)


def gru_step(a_x: Tensor, h: Tensor, w: LayerWeights):
    """One GRU step as nn.GRU computes it (the reset gate multiplies W_hn h + b_hn, or its LN)."""
    x_r, x_z, x_n = a_x.chunk(3, dim=1)  # each [B, H]
    h_r, h_z, h_n = recurrent_side(h, w).chunk(3, dim=1)  # each [B, H]
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
    training: bool = False,
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

    With w.zoneout = p > 0 each new state is zoned out (EQUATIONS["zoneout"]) before the pad
    carry and the tap: training draws the masks (zoneout_masks), otherwise the expectation.
    """
    a_x = input_side(inputs, w).unbind(0)  # T x [B, G*H]
    p = w.zoneout
    zoned_h = zoned_c = [None] * len(a_x)  # None: the expectation
    if p > 0 and training:
        zoned_h = zoneout_masks((len(a_x), *h0.shape), p, h0).unbind(0)  # T x [B, H]
        if c0 is not None:
            zoned_c = zoneout_masks((len(a_x), *h0.shape), p, h0).unbind(0)  # T x [B, H]
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
        if p > 0:
            h = zone(h, h_prev, p, zoned_h[t])  # [B, H]
            c = zone(c, c_prev, p, zoned_c[t]) if c is not None else None  # [B, H]
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
