"""EncoderDecoder: an encoder reads the source, its final state is the context that starts the
decoder, and the decoder writes the target one token at a time (Sutskever et al. 2014; Cho et
al. 2014). With attention over every encoder state: AttentionEncoderDecoder (attention_seq2seq.py).

Decoding one step at a time (greedy, scheduled sampling, beam search) goes through three
methods every encoder-decoder has: `start(x)` encodes the source into a decoding state,
`step(token, state)` reads one target token and returns the next token's logits, and
`state.select(index)` keeps (and repeats) the batch rows a beam goes on with.

Target vocabulary convention (set by encdec tasks): token 0 is <sos>, token 1 is <eos>; target
positions after <eos> hold IGNORE and carry no loss.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .config import MAX_HIDDEN, ModelConfig
from .describe import Part, Read, groups, module_part, recurrent_parts
from .init import initialise
from .losses import IGNORE
from .recurrent import State, make_recurrent, run_recurrent
from .replay import Replay, Taps, run_stack
from .tasks.base import TaskSpec

SOS, EOS = 0, 1


def decoder_config(cfg: ModelConfig) -> ModelConfig:
    """Unidirectional, and as wide as the encoder's states side by side (both directions)."""
    if cfg.hidden_size * cfg.num_directions > MAX_HIDDEN:
        raise ValueError(
            f"a bidirectional encoder's decoder is 2 x hidden_size = {2 * cfg.hidden_size} wide, over "
            f"the limit of {MAX_HIDDEN}; use hidden_size <= {MAX_HIDDEN // 2}"
        )
    return dataclasses.replace(cfg, bidirectional=False, hidden_size=cfg.hidden_size * cfg.num_directions)


def teacher_inputs(y: Tensor) -> Tensor:
    """Teacher forcing: the decoder reads <sos>, then the true previous token. [B, T_out]."""
    previous = y[:, :-1].masked_fill(y[:, :-1] == IGNORE, EOS)  # [B, T_out-1]
    return torch.cat([torch.full_like(y[:, :1], SOS), previous], dim=1)  # [B, T_out]


def feed_back(model: nn.Module, state, batch: int, teacher: Tensor | None = None,
              sampled: Tensor | None = None) -> Tensor:
    """Decode spec.out_len steps from `state`, feeding back the most likely token (greedy).
    With `teacher` ([B, T_out] decoder inputs) the decoder reads those instead, except where
    `sampled` ([B, T_out] bool) is True: there it reads its own previous prediction (scheduled
    sampling, Bengio et al. 2015). Returns the logits [B, T_out, V]."""
    token = torch.full((batch,), SOS, dtype=torch.long)  # [B]
    logits = []
    for t in range(model.spec.out_len if teacher is None else teacher.shape[1]):
        if teacher is not None:  # the true token, or (where sampled) the prediction just made
            token = teacher[:, t] if sampled is None else torch.where(sampled[:, t], token, teacher[:, t])  # [B]
        step, state = model.step(token, state)  # [B, V]
        logits.append(step)
        token = step.argmax(dim=-1)  # [B]
    return torch.stack(logits, dim=1)  # [B, T_out, V]


def encoder_context(cfg: ModelConfig, h_n: State) -> State:
    """The encoder's final state -> the decoder's initial state, layer by layer: a
    bidirectional encoder's two directions are put side by side. [L*dirs, B, H] -> [L, B, dirs*H]."""
    def join(s: Tensor) -> Tensor:
        L, dirs = cfg.num_layers, cfg.num_directions
        return s.reshape(L, dirs, *s.shape[1:]).permute(0, 2, 1, 3).reshape(L, s.shape[1], -1)

    return tuple(join(s) for s in h_n) if isinstance(h_n, tuple) else join(h_n)


def check_source(x: Tensor) -> None:
    if x.dim() != 2 or x.shape[1] == 0:
        raise ValueError(
            f"the source must be token ids [batch, T] with T >= 1; got shape {list(x.shape)} (an empty source?)"
        )


def select_state(state: State, index: Tensor) -> State:
    """Rows `index` ([K]) of a decoder state's batch, nn.LSTM's layout: each [L, K, H']."""
    if isinstance(state, tuple):
        return tuple(s.index_select(1, index) for s in state)
    return state.index_select(1, index)


@dataclass
class Decoding:
    """Where a recurrent decoder is: its state, and the encoder's states it may attend to."""

    state: State  # nn.LSTM's layout: [L, B, H']
    memory: Tensor  # [B, S, H']  every encoder state, in source order
    padded: Tensor | None = None  # [B, S]  True at the source's padding; None: a task that never pads

    def select(self, index: Tensor) -> Decoding:
        """Rows `index` ([K]) of the batch, in that order (a row may repeat)."""
        padded = self.padded.index_select(0, index) if self.padded is not None else None  # [K, S]
        return Decoding(select_state(self.state, index), self.memory.index_select(0, index), padded)  # [K, S, H']


class EncoderDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        self.cfg, self.spec = cfg, spec
        self.vocab: tuple[str, ...] | None = None  # set by build_model from the task
        self.decoder_cfg = decoder_config(cfg)
        self.source_embedding = nn.Embedding(spec.input_size, cfg.embedding_dim)
        self.encoder = make_recurrent(cfg, cfg.embedding_dim)
        self.target_embedding = nn.Embedding(spec.output_size, cfg.embedding_dim)
        self.decoder = make_recurrent(self.decoder_cfg, self.decoder_input_size())
        initialise(self.encoder, cfg)
        initialise(self.decoder, self.decoder_cfg)
        self.head = nn.Linear(self.decoder_cfg.hidden_size, spec.output_size)

    def decoder_input_size(self) -> int:
        """What the decoder reads at each step: the previous target token's embedding."""
        return self.cfg.embedding_dim

    def context(self, h_n: State) -> State:
        return encoder_context(self.cfg, h_n)

    teacher_inputs = staticmethod(teacher_inputs)

    def source(self, x: Tensor) -> Tensor:
        """What the encoder reads: the source embedded, backwards with cfg.reverse_source. [B, S, E]."""
        check_source(x)
        return self.source_embedding(x.flip(1) if self.cfg.reverse_source else x)

    def source_padding(self, x: Tensor) -> Tensor | None:
        """[B, S] True at the source's pad steps, in the order the encoder reads them (the dates
        task pads at the front, so with reverse_source the pads come last); None: never padded."""
        padded = self.spec.padded(x)
        return padded.flip(1) if padded is not None and self.cfg.reverse_source else padded

    def in_source_order(self, out: Tensor) -> Tensor:
        """The encoder's states [B, S, H'] by source position, whichever way it read."""
        return out.flip(1) if self.cfg.reverse_source else out

    def start(self, x: Tensor) -> Decoding:
        """The encoder skips the source's pads, so the context is each direction's state after its
        last real token."""
        out, h_n = run_recurrent(self.encoder, self.source(x), None, self.source_padding(x))  # [B, S, dirs*H]
        return Decoding(self.context(h_n), self.in_source_order(out), self.spec.padded(x))

    def step(self, token: Tensor, decoding: Decoding) -> tuple[Tensor, Decoding]:
        """Read token [B], return the next token's logits [B, V]."""
        out, state = self.decoder(self.target_embedding(token[:, None]), decoding.state)  # [B, 1, H']
        return self.head(out[:, 0]), dataclasses.replace(decoding, state=state)

    def head_input(self, decoding: Decoding, y: Tensor) -> Tensor:
        """What the head reads at every step, teacher-forced: all steps in one call of the decoder's
        kernel, since every input is known. [B, T_out, H']."""
        out, _ = self.decoder(self.target_embedding(teacher_inputs(y)), decoding.state)  # [B, T_out, H']
        return out

    def teacher_forced(self, decoding: Decoding, y: Tensor) -> Tensor:
        return self.head(self.head_input(decoding, y))  # [B, T_out, V]

    def at_targets(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher-forced, the head at the steps with a target only: (logits [N, V], their targets [N]) for
        the N entries of y [B, T_out] that are not IGNORE (a batch's shorter translations end early). The
        loss and accuracy of forward(x, y) with IGNORE's steps left out, for a fraction of the head's work:
        over a vocabulary of 12,000 French words the head is most of a step."""
        chosen = y != IGNORE  # [B, T_out]
        return self.head(self.head_input(self.start(x), y)[chosen]), y[chosen]  # [N, V], [N]

    def forward(self, x: Tensor, y: Tensor | None = None, sampled: Tensor | None = None) -> Tensor:
        """Logits [B, T_out, V]: teacher-forced on y when given (reading its own previous
        prediction instead wherever `sampled` [B, T_out] is True), else greedy decoding."""
        decoding = self.start(x)
        if y is None:
            return feed_back(self, decoding, x.shape[0])
        if sampled is None:
            return self.teacher_forced(decoding, y)
        return feed_back(self, decoding, x.shape[0], teacher_inputs(y), sampled)

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The teacher-forced pass through the written-out equations, for engine.record. With
        reverse_source the encoder's stack is recorded in the order it read the source."""
        encoder, _ = run_stack("encoder", self.cfg, self.encoder, self.source(x), taps, padded=self.source_padding(x))
        state = self.context(encoder.final_state())
        decoder_in = self.target_embedding(teacher_inputs(y))  # [B, T_out, E]
        decoder, out = run_stack("decoder", self.decoder_cfg, self.decoder, decoder_in, taps, state)
        return Replay(self.head(out), {"encoder": encoder, "decoder": decoder})

    def recurrent_stacks(self) -> dict[str, tuple[ModelConfig, nn.Module]]:
        """Each recurrent stack's config and module, by the name its recording has."""
        return {"encoder": (self.cfg, self.encoder), "decoder": (self.decoder_cfg, self.decoder)}

    def describe(self) -> list[Part]:
        """The source's embedding and the encoder's layers, the target's embedding and the
        decoder's layers (each started by its encoder layer's final state), the head."""
        E, H = self.cfg.embedding_dim, self.decoder_cfg.hidden_size
        return [
            module_part(self, self.source_embedding, "source_embedding", "embedding", "input", ("S",), ("S", E)),
            *recurrent_parts(self, "encoder", self.cfg, self.encoder, ("S", E), "encoder "),
            module_part(self, self.target_embedding, "target_embedding", "embedding", "input", ("T",), ("T", E)),
            *self.decoder_parts(),
            module_part(self, self.head, "head", "linear head", "head", ("T", H), ("T", self.spec.output_size),
                        reads=self.head_reads()),
        ]

    def head_reads(self) -> tuple[Read, ...]:
        """The decoder's top layer's s_t, every step."""
        return (Read("decoder", self.decoder_cfg.num_layers - 1, None, None),)

    def decoder_parts(self) -> list[Part]:
        reads = ("T", self.decoder_input_size())
        return recurrent_parts(self, "decoder", self.decoder_cfg, self.decoder, reads, "decoder ")

    def param_groups(self) -> dict[str, list[str]]:
        """Parameter names by part, for freezing: "source_embedding", "encoder layer 0", ...,
        "target_embedding", "decoder layer 0", ..., "head"."""
        return groups(self.describe())
