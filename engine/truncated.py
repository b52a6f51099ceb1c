"""Truncated BPTT: the chunks, each chunk's loss, and the replay that records it.

The hidden state is carried forward from chunk to chunk but detached at every border, so the
gradient of a chunk's loss stops at that chunk's first step: no dependency longer than the window
can be learned. `Trainer.forward_backward` trains this way on PyTorch's kernels and
`replay_truncated` replays it for `engine.record` (an LSTM's or RNN's chunks on its kernel); both take
their chunks and loss terms from here, so they cut the gradient at the same steps.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from .cells import LayerTrace
from .config import ModelConfig, check_int
from .recurrent import State, final_state
from .replay import Replay, StackReplay, Taps, replay_any
from .train_config import MAX_BPTT_WINDOW

Loss = Callable[[Tensor, Tensor], Tensor]


def check_truncation(cfg: ModelConfig, mapping: str, window: int) -> None:
    """ValueError unless truncated BPTT with this window (0 = full BPTT) fits a model of this
    config reading a task of this mapping."""
    check_int("bptt_window", window, 0, MAX_BPTT_WINDOW)
    if not window:
        return
    if cfg.arch == "transformer":
        raise ValueError("truncated BPTT cuts a recurrence, and a transformer has none; set bptt_window=0")
    if cfg.bidirectional:
        raise ValueError(
            "truncated BPTT carries the state forward in time, which a bidirectional layer "
            "cannot do; set bptt_window=0 or bidirectional=False"
        )
    if mapping not in ("seq2seq", "seq2vec"):
        raise ValueError(
            f"truncated BPTT is for one model reading one sequence; set bptt_window=0 for a {mapping} task"
        )


def chunks(T: int, window: int) -> list[slice]:
    """The steps of each chunk: [0, window), [window, 2·window), ..., the last one shorter."""
    return [slice(start, min(start + window, T)) for start in range(0, T, window)]


def chunk_loss(model: nn.Module, loss: Loss, out: Tensor, y: Tensor, chunk: slice, T: int
               ) -> tuple[Tensor, Tensor] | None:
    """(loss term, y_hat) of one chunk, from the stack's output on it (out: [B, k, dirs*H]).
    An aligned (seq2seq) task: the loss on the chunk's own steps, weighted by its share of T so
    that the terms add up to the mean over the sequence. A seq2vec task: the whole loss at the
    last chunk, and None before it (there is no target there)."""
    if model.spec.mapping == "seq2seq":
        y_hat = model.readout(out)  # [B, k, out]
        return loss(y_hat, y[:, chunk]) * (chunk.stop - chunk.start) / T, y_hat
    if chunk.stop == T:
        y_hat = model.readout(out)  # [B, out]
        return loss(y_hat, y), y_hat
    return None


def detach_state(state: State) -> State:
    if isinstance(state, tuple):
        return tuple(s.detach() for s in state)
    return state.detach()


def join_traces(pieces: list[list[list[LayerTrace]]]) -> list[list[LayerTrace]]:
    """traces[layer][direction] of every chunk, put end to end in time."""
    joined = []
    for rows in zip(*pieces):  # one layer, every chunk
        row = []
        for parts in zip(*rows):  # one direction, every chunk
            last = parts[-1]
            row.append(LayerTrace(
                h=torch.cat([p.h for p in parts]),  # [T, B, H]
                c=torch.cat([p.c for p in parts]) if last.c is not None else None,  # [T, B, H]
                gates={name: torch.cat([p.gates[name] for p in parts]) for name in last.gates},  # each [T, B, H]
                h_last=last.h_last,
                c_last=last.c_last,
            ))
        joined.append(row)
    return joined


def replay_truncated(model: nn.Module, x: Tensor, y: Tensor, taps: Taps, window: int, loss: Loss
                     ) -> tuple[Replay, Tensor]:
    """A SequenceModel's replay (as its `replay` method does it, taps on every h_t) in chunks of
    `window` steps with the state detached between them, and the sum of the chunks' loss terms:
    the loss whose gradients Trainer.forward_backward accumulates with TrainConfig(bptt_window=window)."""
    cfg, T = model.cfg, x.shape[1]
    x_in = model.inputs(x)  # [B, T, D]
    padded = model.spec.padded(x)  # [B, T] or None
    stack_taps = taps.make("rnn", cfg, x_in)  # [L, dirs, T, B, H]
    state, pieces, terms, outputs = None, [], [], []
    for chunk in chunks(T, window):
        traces, out = replay_any(cfg, model.rnn, x_in[:, chunk], stack_taps[:, :, chunk], state,
                                 padded[:, chunk] if padded is not None else None, taps.written_out)  # out: [B, k, H]
        term = chunk_loss(model, loss, out, y, chunk, T)
        if term is not None:
            terms.append(term[0])
            outputs.append(term[1])
        pieces.append(traces)
        state = detach_state(final_state(cfg, traces))  # the cut: no gradient crosses this border
    aligned = model.spec.mapping == "seq2seq"
    y_hat = torch.cat(outputs, dim=1) if aligned else outputs[0]
    stack = StackReplay(cfg, model.rnn, x_in, None, join_traces(pieces), padded)
    return Replay(y_hat, {"rnn": stack}), torch.stack(terms).sum()
