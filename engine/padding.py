"""Padding is not data: PyTorch's kernels on packed sequences, with every pad step holding the
state carried through it.

A padded task marks its pad tokens (TaskSpec.pad_id). The shipped ones (sentiment, dates) pad at
the FRONT, so the forward direction's last step is real but it starts by reading pads, and a
backward direction starts on them; an encoder that reverses its source reads them at the END.
So nothing here assumes a side: the real steps of each sample are moved to the front in order,
packed (`pack_padded_sequence(..., enforce_sorted=False)`, so each sample's forward direction
stops at its last real step and its backward direction starts there), and put back where they
came from. A pad step's output is then the state the direction carried through it: the last real
step's before it (h_0 if none) going forward, the next real step's (h_0 if none) going backward.
That is what the written-out loop computes with h_t = h_{t-1}, c_t = c_{t-1} at a pad
(cells.unroll_layer), so a read-out of the last position (forward) and of position 0 (backward)
reads each sample's own last real state, in both paths. A forward pass that reads only the
output of a unidirectional stack needs no packing (run_compacted), which on this CPU keeps
nn.LSTM on oneDNN's fused kernel.
"""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

State = Tensor | tuple[Tensor, Tensor]  # h_n, or (h_n, c_n) for the LSTM: each [L*dirs, B, H]


def real_steps(padded: Tensor | None) -> Tensor | None:
    """[T, B] True where a step is data, from padded [B, T] (True at a pad); None: no pad at all,
    so the caller takes the path it took before padding was known (same kernel, same cost)."""
    if padded is None or not bool(padded.any()):
        return None
    return ~padded.T  # [T, B]


def carry_gather(out: Tensor, index: Tensor, valid: Tensor, h0: Tensor) -> Tensor:
    """out [B, T, H] at index [B, T] where valid [B, T], else h0 [B, H]."""
    picked = out.gather(1, index[:, :, None].expand(-1, -1, out.shape[2]))  # [B, T, H]
    return torch.where(valid[:, :, None], picked, h0[:, None])  # [B, T, H]


def compacted(x_in: Tensor, padded: Tensor) -> Tensor:
    """x_in [B, T, D] with each sample's real steps moved to the front, in order: [B, T, D]."""
    order = torch.argsort(padded.to(torch.int8), dim=1, stable=True)  # [B, T]: real steps first
    return x_in.gather(1, order[:, :, None].expand(-1, -1, x_in.shape[2]))  # [B, T, D]


def run_packed(rnn: nn.Module, x_in: Tensor, padded: Tensor, state: State | None) -> tuple[Tensor, State]:
    """nn.LSTM / nn.GRU / nn.RNN (batch_first) on x_in [B, T, D] with pads (padded [B, T], True at
    a pad) anywhere: returns the output [B, T, dirs*H], each pad step holding the state carried
    through it, and the final state (each sample's state after its last real step)."""
    lengths = padded.logical_not().sum(1)  # [B]
    # pack_padded_sequence refuses a length of 0 (a sample that is all pads, e.g. a truncated
    # chunk before a short review starts): run it on one pad and give it back its initial state.
    packed = pack_padded_sequence(compacted(x_in, padded), lengths.clamp(min=1).cpu(), batch_first=True,
                                  enforce_sorted=False)
    out_packed, final = rnn(packed, state)
    out, _ = pad_packed_sequence(out_packed, batch_first=True)  # [B, max length, dirs*H]
    empty = lengths == 0  # [B]
    if bool(empty.any()):
        final = keep_initial(final, state, empty)
    return spread(rnn, out, padded, state), final


def run_compacted(rnn: nn.Module, x_in: Tensor, padded: Tensor, state: State | None) -> Tensor:
    """The output of run_packed for a unidirectional stack, on the module's plain (fused) call:
    with each sample's real steps moved to the front, the pads behind them reach no real step's
    output, however many layers. Only its final state would have read them, so there is none."""
    steps = max(1, int(padded.logical_not().sum(1).max()))  # the longest sample's real steps
    out, _ = rnn(compacted(x_in, padded)[:, :steps], state)  # [B, steps, H]
    return spread(rnn, out, padded, state)


def spread(rnn: nn.Module, out: Tensor, padded: Tensor, state: State | None) -> Tensor:
    """A stack's output on the compacted steps, out [B, T', dirs*H] (sample b's k-th real step at
    k), put back at the steps they came from, [B, T, dirs*H], each pad step holding the state
    carried through it."""
    H, dirs = rnn.hidden_size, 2 if rnn.bidirectional else 1
    top = (rnn.num_layers - 1) * dirs  # the top layer's forward direction, in the state's layout
    h_init = state[0] if isinstance(state, tuple) else state  # [L*dirs, B, H] or None
    real = ~padded  # [B, T]
    seen = real.cumsum(1)  # [B, T]: real steps at or before t
    # Going forward, step t holds the state of the last real step at or before it (rank seen-1).
    forward = carry_gather(out[..., :H], (seen - 1).clamp(min=0), seen > 0, initial(h_init, top, out, H))
    if dirs == 1:
        return forward
    # Going backward, step t holds the state of the first real step at or after it (rank seen-real).
    ahead = seen - real.long()  # [B, T]
    backward = carry_gather(out[..., H:], ahead.clamp(max=out.shape[1] - 1), ahead < seen[:, -1:],
                            initial(h_init, top + 1, out, H))
    return torch.cat([forward, backward], dim=2)  # [B, T, 2H]


def initial(h_init: Tensor | None, k: int, like: Tensor, H: int) -> Tensor:
    """h_0 [B, H] of layer-direction k: zeros when the stack started from none."""
    return like.new_zeros(like.shape[0], H) if h_init is None else h_init[k]


def keep_initial(final: State, state: State | None, empty: Tensor) -> State:
    """The final state with the rows of empty [B] samples (no real step) put back to the initial state."""
    finals = final if isinstance(final, tuple) else (final,)
    starts = state if isinstance(state, tuple) else (state,) * len(finals)
    kept = tuple(
        torch.where(empty[None, :, None], s if s is not None else torch.zeros_like(f), f)  # [L*dirs, B, H]
        for f, s in zip(finals, starts)
    )
    return kept if isinstance(final, tuple) else kept[0]
