"""PointerNetwork (Vinyals, Fortunato & Jaitly 2015): an encoder-decoder whose output at every
step is its attention over the input positions, so it answers with positions of its input (of
any length) instead of words of a fixed vocabulary. The course's equation 29, with the encoder's
states e_j (the course's H_t') and the decoder's d_t (its S_t):

    e_j  = encoder(x_j)                                   the encoder's states, in source order
    d_t  = RNN(x_{C_{t-1}}, d_{t-1}),   d_0 = the encoder's final state
    u_tj = score(d_t, e_j)                                e.g. additive: v^T tanh(W_1 e_j + W_2 d_t)
    p(C_t = j | C_1 .. C_{t-1}, x) = softmax_j(u_tj)

Nothing is blended into the output, no context vector: the attention weights ARE the output, "the
output only responds to the positions but not the input content". The decoder reads the VALUE it
pointed to one step before (teacher forcing: the true one), and first a learned input, the
paper's ⇒. The answer ends by pointing at a learned end marker e_end, a key before the input's.

Classes keep the encoder-decoder's convention (seq2seq.py): 0 <sos>, 1 <eos> (the end marker),
2 + j input position j. Nothing ever points at <sos>: its logit is -inf, its probability exactly
0, so the softmax over the classes is the pointer's distribution itself, which a recording keeps
as the "pointer" AttentionTrace (key 0 the end marker, key 1 + j position j).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import Attended, Attention
from .config import ModelConfig
from .describe import Part, Read, groups, module_part, recurrent_parts
from .init import initialise
from .recurrent import State, make_recurrent, run_recurrent
from .replay import Replay, Taps, run_stack
from .seq2seq import decoder_config, encoder_context, feed_back, select_state, teacher_inputs
from .sites import POINTER
from .tasks.base import TaskSpec


def check_values(x: Tensor, size: int) -> Tensor:
    if x.dim() != 3 or x.shape[1] == 0 or x.shape[2] != size:
        raise ValueError(
            f"a pointer network reads values [batch, S, {size}] with S >= 1; got shape {list(x.shape)} "
            "(an empty input?)"
        )
    return x


def read(inputs: Tensor, tokens: Tensor) -> Tensor:
    """The decoder's input for each token [B, T]: row `token` of inputs [B, S+2, E]. [B, T, E]."""
    return inputs.gather(1, tokens[..., None].expand(-1, -1, inputs.shape[-1]))


class ValueEmbedding(nn.Module):
    """What both stacks read: a value x_j as W_e x_j + b_e, and ⇒ (`go`), the decoder's first
    input, learned, which stands where no value has been pointed to yet."""

    def __init__(self, size: int, E: int):
        super().__init__()
        self.W_e = nn.Linear(size, E)
        self.go = nn.Parameter(0.1 * torch.randn(E))

    def forward(self, x: Tensor) -> Tensor:
        return self.W_e(x)  # [B, S, E]

    def table(self, embedded: Tensor) -> Tensor:
        """The decoder's input after pointing at each class: ⇒ for <sos> and <eos> (after the end
        nothing is read, and a step there carries no loss), then each value. [B, S+2, E]."""
        go = self.go.expand(embedded.shape[0], 2, -1)  # [B, 2, E]
        return torch.cat([go, embedded], dim=1)  # [B, S+2, E]


class Pointer(nn.Module):
    """u_tj = score(d_t, e_j) over the end marker e_end (learned) and every input position."""

    def __init__(self, score: str, size: int):
        super().__init__()
        self.end = nn.Parameter(0.1 * torch.randn(size))  # e_end
        self.attention = Attention(score, size)

    def keys(self, e: Tensor) -> Tensor:
        """[e_end; e_0 .. e_{S-1}]: [B, S, H'] -> [B, S+1, H']."""
        return torch.cat([self.end.expand(e.shape[0], 1, -1), e], dim=1)

    def forward(self, d: Tensor, keys: Tensor) -> Attended:  # d [B, T, H'], keys [B, S+1, H']
        return self.attention(d, keys)


@dataclass
class Pointing:
    """Where a pointer network's decoder is."""

    state: State  # nn.LSTM's layout: [L, B, H']
    keys: Tensor  # [B, S+1, H']  e_end, then every encoder state in source order
    inputs: Tensor  # [B, S+2, E]  what the decoder reads after pointing at each class

    def select(self, index: Tensor) -> Pointing:
        """Rows `index` ([K]) of the batch, in that order (a row may repeat)."""
        return Pointing(select_state(self.state, index), self.keys.index_select(0, index),
                        self.inputs.index_select(0, index))


class PointerNetwork(nn.Module):
    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        self.cfg, self.spec = cfg, spec
        self.vocab: tuple[str, ...] | None = None  # set by build_model from the task
        self.decoder_cfg = decoder_config(cfg)
        self.embedding = ValueEmbedding(spec.input_size, cfg.embedding_dim)
        self.encoder = make_recurrent(cfg, cfg.embedding_dim)
        self.decoder = make_recurrent(self.decoder_cfg, cfg.embedding_dim)
        initialise(self.encoder, cfg)
        initialise(self.decoder, self.decoder_cfg)
        self.pointer = Pointer(cfg.attention, self.decoder_cfg.hidden_size)

    def reading_order(self, seq: Tensor) -> Tensor:
        """[B, S, ...] in the order the encoder reads it (backwards with cfg.reverse_source), or
        the encoder's output back in source order: the flip is its own inverse."""
        return seq.flip(1) if self.cfg.reverse_source else seq

    @staticmethod
    def logits(a: Attended) -> Tensor:
        """u over [e_end, e_0 ..] as the classes' logits [B, T, S+2], <sos> never: -inf."""
        u = a.logits[:, 0]  # [B, T, S+1]
        never = u.new_full((*u.shape[:2], 1), float("-inf"))  # [B, T, 1]
        return torch.cat([never, u], dim=-1)  # [B, T, S+2]

    def start(self, x: Tensor) -> Pointing:
        embedded = self.embedding(check_values(x, self.spec.input_size))  # [B, S, E]
        out, h_n = run_recurrent(self.encoder, self.reading_order(embedded))  # [B, S, dirs*H]
        keys = self.pointer.keys(self.reading_order(out))  # [B, S+1, H']
        return Pointing(encoder_context(self.cfg, h_n), keys, self.embedding.table(embedded))

    def step(self, token: Tensor, pointing: Pointing) -> tuple[Tensor, Pointing]:
        """Read the value pointed to ([B] classes), return the next pointer's logits [B, S+2]."""
        d, state = self.decoder(read(pointing.inputs, token[:, None]), pointing.state)  # d_t: [B, 1, H']
        return self.logits(self.pointer(d, pointing.keys))[:, 0], dataclasses.replace(pointing, state=state)

    def teacher_forced(self, pointing: Pointing, y: Tensor) -> Tensor:
        """Every step's input is known: one call of the decoder's kernel, then every d_t points. [B, T_out, S+2]."""
        d, _ = self.decoder(read(pointing.inputs, teacher_inputs(y)), pointing.state)  # [B, T_out, H']
        return self.logits(self.pointer(d, pointing.keys))

    def forward(self, x: Tensor, y: Tensor | None = None, sampled: Tensor | None = None) -> Tensor:
        """Logits [B, T_out, S+2]: teacher-forced on y when given (reading its own previous
        pointer instead wherever `sampled` [B, T_out] is True), else greedy decoding."""
        pointing = self.start(x)
        if y is None:
            return feed_back(self, pointing, x.shape[0])
        if sampled is None:
            return self.teacher_forced(pointing, y)
        return feed_back(self, pointing, x.shape[0], teacher_inputs(y), sampled)

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The teacher-forced pass through the written-out equations, for engine.record, with
        the pointer's distribution alpha[t, j] = p(C_t = j) of every step ("pointer")."""
        embedded = self.embedding(check_values(x, self.spec.input_size))  # [B, S, E]
        encoder, out = run_stack("encoder", self.cfg, self.encoder, self.reading_order(embedded), taps)
        keys = self.pointer.keys(self.reading_order(out))  # [B, S+1, H']
        state = encoder_context(self.cfg, encoder.final_state())
        d_in = read(self.embedding.table(embedded), teacher_inputs(y))  # [B, T_out, E]
        decoder, d = run_stack("decoder", self.decoder_cfg, self.decoder, d_in, taps, state)
        a = self.pointer(d, keys)
        return Replay(self.logits(a), {"encoder": encoder, "decoder": decoder}, attention={POINTER: a})

    def recurrent_stacks(self) -> dict[str, tuple[ModelConfig, nn.Module]]:
        return {"encoder": (self.cfg, self.encoder), "decoder": (self.decoder_cfg, self.decoder)}

    def describe(self) -> list[Part]:
        """The values' embedding (with ⇒), the encoder's layers, the decoder's layers (started
        by the encoder's final state, reading the values pointed to), and the pointer: the
        score and e_end, reading d_t and writing the distribution over the classes."""
        E, H, top = self.cfg.embedding_dim, self.decoder_cfg.hidden_size, self.decoder_cfg.num_layers - 1
        return [
            module_part(self, self.embedding, "embedding", "linear", "input", ("S", self.spec.input_size), ("S", E)),
            *recurrent_parts(self, "encoder", self.cfg, self.encoder, ("S", E), "encoder "),
            *recurrent_parts(self, "decoder", self.decoder_cfg, self.decoder, ("T", E), "decoder "),
            module_part(self, self.pointer, "pointer", "pointer", "head", ("T", H), ("T", self.spec.output_size),
                        stack="decoder", score=self.cfg.attention, heads=1, reads=(Read("decoder", top, None, None),)),
        ]

    def param_groups(self) -> dict[str, list[str]]:
        """Parameter names by part, for freezing: "embedding", "encoder layer 0", ...,
        "decoder layer 0", ..., "pointer"."""
        return groups(self.describe())
