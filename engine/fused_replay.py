"""An nn.LSTM (or nn.RNN) stack recorded through PyTorch's own kernel, not the written-out loop.

On this CPU nn.LSTM runs oneDNN's fused kernel, 20x-30x faster than a Python loop over time at
batch 1, T=500 (benchmarks/README.md, section 1); nn.RNN's C++ loop takes about two thirds of the
written-out replay's time. Everything a recording needs can come from the kernel:

- h_t for every t is the kernel's output.
- dL/dh_t, the total BPTT gradient, is not dL/d(output_t): the kernel's backward keeps the recurrent
  part to itself. So each layer reads an extra input block z that is all zeros, with W_hh as its
  input weights: step t's gates get W_hh z_t = 0 more, and dL/dz_t = W_hh^T dL/d(gates_t), exactly
  what h_{t-1} receives through the recurrence. A zero tap added to h_t on the output and fed to
  the next step as z makes dL/d(tap_t) the total, as the written-out loop's taps do
  (engine/replay.py). The block's weight gets the gradient dL/d(gates) z^T = 0, so dL/dW is unchanged.
- The gates need no loop: each depends on x_t and h_{t-1} only, and every h_{t-1} is in the output,
  so all steps' gates are one matmul. Only c_t = f_t c_{t-1} + i_t g_t is a loop, element-wise.
- Each direction is its own call (a backward one reads the sequence flipped): one bidirectional
  call with both directions' zero blocks measured 1.4x two calls.

The written-out replay (recurrent.replay_stack) stays the reference: tests hold this path to it.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .cells import LayerTrace, LayerWeights
from .config import ModelConfig
from .padding import real_steps
from .recurrent import State, initial_state, layer_weights


def records_fused(rnn: nn.Module, padded: Tensor | None) -> bool:
    """PyTorch's own LSTM (no projection) or RNN on a sequence without pads (padded [B, T], True at
    a pad: training packs such a batch, which leaves the fused kernel anyway). The GRU's recurrent
    term r_t * (W_hn h_{t-1} + b_hn) is not a linear function of an input, so no zero block gives
    its gradient."""
    kinds = type(rnn) is nn.RNN or (type(rnn) is nn.LSTM and rnn.proj_size == 0)
    return kinds and real_steps(padded) is None


def fed_back(taps: Tensor, reverse: bool) -> Tensor:
    """z: the tap of h_t goes to the step after t, which is t+1 going forward and t-1 going
    backward; the first step gets zeros. [T, B, H] -> [T, B, H]."""
    none = torch.zeros_like(taps[:1])  # [1, B, H]
    return torch.cat([taps[1:], none]) if reverse else torch.cat([none, taps[:-1]])  # [T, B, H]


def cell_states(f: Tensor, ig: Tensor, c0: Tensor) -> Tensor:
    """c_t = f_t c_{t-1} + i_t g_t in reading order: f, ig [T, B, H], c0 [B, H] -> [T, B, H]."""
    cs, c = [], c0
    for f_t, ig_t in zip(f, ig):
        c = torch.addcmul(ig_t, f_t, c)  # [B, H]
        cs.append(c)
    return torch.stack(cs)  # [T, B, H]


def direction_trace(w: LayerWeights, read: Tensor, h: Tensor, h0: Tensor, c0: Tensor) -> dict[str, Tensor]:
    """Gates and c_t of one direction, in its reading order, from what it read and output, with
    no loop but c_t's. read [T, B, D], h [T, B, H] (with its taps), h0, c0 [B, H]."""
    T, B, H = h.shape
    with torch.no_grad():
        before = torch.cat([h0[None], h[:-1]])  # h_{t-1}: [T, B, H]
        pre = torch.addmm(w.b_ih + w.b_hh, read.flatten(0, 1), w.w_ih.T)  # [T*B, 4H]
        pre = torch.addmm(pre, before.flatten(0, 1), w.w_hh.T).view(T, B, 4 * H)  # [T, B, 4H]
        i, f = torch.sigmoid(pre[..., : 2 * H]).chunk(2, dim=2)  # each [T, B, H]
        g = torch.tanh(pre[..., 2 * H : 3 * H])  # [T, B, H]
        o = torch.sigmoid(pre[..., 3 * H :])  # [T, B, H]
        c = cell_states(f, i * g, c0)  # [T, B, H]
    return {"i": i, "f": f, "g": g, "o": o, "c": c}


def direction(rnn: nn.Module, layer: int, d: int, layer_in: Tensor, taps: Tensor, h0: Tensor, c0: Tensor | None
              ) -> LayerTrace:
    """One direction of one layer in one call of the module's kernel. layer_in [T, B, D], taps
    [T, B, H] (zeros), h0 and an LSTM's c0 [B, H]. A backward direction reads the sequence flipped
    and is flipped back."""
    w, reverse = layer_weights(rnn, layer, d), d == 1
    back = (lambda t: t.flip(0)) if reverse else (lambda t: t)  # input positions <-> reading order
    read = back(torch.cat([layer_in, fed_back(taps, reverse)], dim=2))  # [T, B, D+H]: x_t and z_t
    flat = [torch.cat([w.w_ih, w.w_hh], dim=1), w.w_hh, w.b_ih, w.b_hh]  # z's input weights are W_hh
    if c0 is None:  # nn.RNN: h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh), its C++ loop
        kernel = torch.rnn_relu if rnn.nonlinearity == "relu" else torch.rnn_tanh
        out, _ = kernel(read, h0[None], flat, True, 1, 0.0, False, False, False)  # out: [T, B, H]
        h = out + back(taps)  # [T, B, H]: the tap on every h_t, as the next step reads it through z
        return LayerTrace(h=back(h), c=None, gates={}, h_last=h[-1], c_last=None)
    out, _, c_n = torch.lstm(read, (h0[None], c0[None]), flat, True, 1, 0.0, False, False, False)  # out: [T, B, H]
    h = out + back(taps)  # [T, B, H]
    kept = direction_trace(w, read[..., : layer_in.shape[2]].detach(), h.detach(), h0.detach(), c0.detach())
    return LayerTrace(
        h=back(h),  # [T, B, H]
        c=back(kept.pop("c")),  # [T, B, H]
        gates={name: back(g) for name, g in kept.items()},  # each [T, B, H]
        h_last=h[-1],  # [B, H]
        c_last=c_n[0],  # [B, H]: the kernel's own, which a decoder starts from (c[-1] equals it to rounding)
    )


def fused_stack(cfg: ModelConfig, rnn: nn.Module, x_in: Tensor, taps: Tensor | None, state: State | None = None
                ) -> tuple[list[list[LayerTrace]], Tensor]:
    """replay_stack's traces[layer][direction] and output [B, T, dirs*H] for an nn.LSTM or nn.RNN
    in eval mode, one kernel call per layer and direction. taps [L, dirs, T, B, H] (zeros) or None."""
    dirs = cfg.num_directions
    layer_in = x_in.transpose(0, 1)  # [T, B, D]
    if taps is None:
        taps = x_in.new_zeros(cfg.num_layers, dirs, x_in.shape[1], x_in.shape[0], cfg.hidden_size)  # [L, dirs, T, B, H]
    traces = []
    for layer in range(cfg.num_layers):
        row = [direction(rnn, layer, d, layer_in, taps[layer, d], *initial_state(cfg, state, layer * dirs + d, x_in))
               for d in range(dirs)]
        traces.append(row)
        layer_in = torch.cat([trace.h for trace in row], dim=2)  # [T, B, dirs*H]
    return traces, layer_in.transpose(0, 1)  # [B, T, dirs*H]
