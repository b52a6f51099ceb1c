"""SequenceModel: input layer -> recurrent stack -> linear read-out, in the task's mapping.

The forward pass is split in three so that the recorder and truncated BPTT can reuse each part:
`inputs` (embedding, or a vector repeated over time), `features` (the recurrent stack, with a
state that can be carried across chunks), `readout` (the head, at the last step or every step).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import ModelConfig
from .describe import Part, Read, groups, module_part, recurrent_parts
from .init import initialise
from .recurrent import State, make_recurrent, run_recurrent
from .replay import Replay, Taps, run_stack
from .tasks.base import TaskSpec


class SequenceModel(nn.Module):
    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        self.cfg = cfg
        self.spec = spec
        self.vocab: tuple[str, ...] | None = None  # set by build_model from the task
        tokens = spec.input_kind == "tokens"
        self.embedding = nn.Embedding(spec.input_size, cfg.embedding_dim) if tokens else None
        self.rnn = make_recurrent(cfg, cfg.embedding_dim if tokens else spec.input_size)
        initialise(self.rnn, cfg)
        self.head = nn.Linear(cfg.hidden_size * cfg.num_directions, spec.output_size)

    def inputs(self, x: Tensor) -> Tensor:
        """What the first recurrent layer reads: [B, T, D]."""
        if self.embedding is not None:
            return self.embedding(x)  # [B, T] -> [B, T, E]
        if self.spec.mapping == "vec2seq":
            return x.unsqueeze(1).expand(-1, self.spec.out_len, -1)  # [B, D] -> [B, T, D]
        return x  # [B, T, D]

    def features(self, x_in: Tensor, state: State | None = None, padded: Tensor | None = None
                 ) -> tuple[Tensor, State]:
        """Run the recurrent stack: [B, T, D] -> [B, T, dirs*H] and the final state. padded [B, T]
        (spec.padded(x), True at a pad token) makes the stack skip the pads (run_recurrent)."""
        return run_recurrent(self.rnn, x_in, state, padded)

    def readout(self, out: Tensor) -> Tensor:
        """seq2vec: the head on the last step's state ([B, out]); a bidirectional layer's
        backward direction finished at t=0, so its state there is the one that has read it all.
        Otherwise the head on every step ([B, T, out]). A pad step's output holds the state
        carried through it (run_recurrent), so with pads at either end these are still each
        sample's states after its last real word, forward, and after its first, backward."""
        if self.spec.mapping != "seq2vec":
            return self.head(out)  # [B, T, out]
        hidden = self.cfg.hidden_size
        last = out[:, -1, :hidden]  # [B, H]
        if self.cfg.bidirectional:
            last = torch.cat([last, out[:, 0, hidden:]], dim=1)  # [B, 2H]
        return self.head(last)  # [B, out]

    def forward(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """y_hat for x. (y is taken, and ignored, so every model trains with model(x, y):
        an encoder-decoder uses it for teacher forcing.)"""
        out, _ = run_recurrent(self.rnn, self.inputs(x), None, self.spec.padded(x), final=False)  # [B, T, dirs*H]
        return self.readout(out)

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The forward pass through the written-out equations, for engine.record."""
        stack, out = run_stack("rnn", self.cfg, self.rnn, self.inputs(x), taps, padded=self.spec.padded(x))
        return Replay(self.readout(out), {"rnn": stack})

    def recurrent_stacks(self) -> dict[str, tuple[ModelConfig, nn.Module]]:
        """Each recurrent stack's config and module, by the name its recording has."""
        return {"rnn": (self.cfg, self.rnn)}

    def head_reads(self) -> tuple[Read, ...]:
        """The states `readout` hands the head: seq2vec [h→_T ; h←_0] (a bidirectional layer's
        backward direction ends at t=0) or h_T; otherwise every h_t (both directions')."""
        top, dirs = self.cfg.num_layers - 1, self.cfg.num_directions
        if self.spec.mapping == "seq2vec":
            return (Read("rnn", top, None, -1),) if dirs == 1 else (Read("rnn", top, 0, -1), Read("rnn", top, 1, 0))
        return tuple(Read("rnn", top, d if dirs > 1 else None, None) for d in range(dirs))

    def describe(self) -> list[Part]:
        """Input (embedding, the values, or a vector repeated over time), every recurrent layer, head."""
        cfg, spec = self.cfg, self.spec
        T = spec.out_len if spec.mapping == "vec2seq" else "T"
        if self.embedding is not None:
            first = module_part(self, self.embedding, "embedding", "embedding", "input", (T,), (T, cfg.embedding_dim))
        else:
            read = (spec.input_size,) if spec.mapping == "vec2seq" else (T, spec.input_size)
            first = module_part(self, None, "input", "input", "input", read, (T, spec.input_size))
        layers = recurrent_parts(self, "rnn", cfg, self.rnn, first.output_shape)
        width = cfg.num_directions * cfg.hidden_size
        ends = spec.mapping == "seq2vec"
        head = module_part(self, self.head, "head", "linear head", "head", (width,) if ends else (T, width),
                           (spec.output_size,) if ends else (T, spec.output_size), reads=self.head_reads())
        return [first, *layers, head]

    def param_groups(self) -> dict[str, list[str]]:
        """Parameter names by part, for freezing: "embedding", "layer 0", "layer 1", ..., "head"."""
        return groups(self.describe())
