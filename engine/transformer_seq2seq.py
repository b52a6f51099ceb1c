"""TransformerEncoderDecoder: Vaswani et al.'s (2017) whole model, for the encdec tasks.

The encoder's self-attention blocks read the whole source at once; the decoder's blocks attend
to the target so far (causal mask) and, through cross-attention, to the encoder's output.
Neither the encoder's self-attention nor the cross-attention looks at the source's padding.
Decoding one token at a time reruns the decoder on the whole prefix (no key/value cache: the
models here are small, and every step's attention stays easy to record).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .attention import causal_mask, padding_mask
from .config import ModelConfig
from .describe import Part, Read, groups, module_part
from .hooks import recording_blocks
from .positional import Positions
from .replay import Replay, Taps
from .seq2seq import check_source, feed_back, teacher_inputs
from .tasks.base import TaskSpec
from .transformer import DecoderBlock, SelfAttentionBlock, block_parts, run_blocks


@dataclass
class TransformerDecoding:
    """Where a transformer decoder is: the encoder's output and the target tokens read so far."""

    memory: Tensor  # [B, S, d]
    tokens: Tensor  # [B, t]  <sos> and the tokens after it
    memory_mask: Tensor | None = None  # [B, 1, 1, S]  -inf on the source's padding; None: no padding

    def select(self, index: Tensor) -> TransformerDecoding:
        """Rows `index` ([K]) of the batch, in that order (a row may repeat)."""
        mask = self.memory_mask.index_select(0, index) if self.memory_mask is not None else None  # [K, 1, 1, S]
        return TransformerDecoding(self.memory.index_select(0, index), self.tokens.index_select(0, index), mask)


class TransformerEncoderDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        self.cfg, self.spec = cfg, spec
        self.vocab: tuple[str, ...] | None = None  # set by build_model from the task
        d = cfg.hidden_size
        self.source_embedding = nn.Embedding(spec.input_size, d)
        self.target_embedding = nn.Embedding(spec.output_size, d)
        self.positions = Positions(cfg)  # one position signal for source and target
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = nn.ModuleList(SelfAttentionBlock(cfg) for _ in range(cfg.num_layers))
        self.decoder = nn.ModuleList(DecoderBlock(cfg) for _ in range(cfg.num_layers))
        self.head = nn.Linear(d, spec.output_size)

    teacher_inputs = staticmethod(teacher_inputs)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor | None]:
        """The source [B, S] -> memory [B, S, d], and the mask that hides its padding from every
        query (None when the task never pads)."""
        check_source(x)
        x_in = self.dropout(self.positions(self.source_embedding(x)))  # [B, S, d]
        padded = self.spec.padded(x)  # [B, S]
        mask = padding_mask(padded, dtype=x_in.dtype) if padded is not None else None  # [B, 1, 1, S]
        return run_blocks(self.encoder, x_in, mask=mask), mask

    def decode(self, tokens: Tensor, memory: Tensor, memory_mask: Tensor | None) -> Tensor:
        """Target tokens read [B, T] -> the next token's logits at every step [B, T, V]."""
        y_in = self.dropout(self.positions(self.target_embedding(tokens)))  # [B, T, d]
        mask = causal_mask(tokens.shape[1], y_in.dtype)  # [T, T]
        out = run_blocks(self.decoder, y_in, memory=memory, mask=mask, memory_mask=memory_mask)  # [B, T, d]
        return self.head(out)  # [B, T, V]

    def start(self, x: Tensor) -> TransformerDecoding:
        memory, memory_mask = self.encode(x)
        return TransformerDecoding(memory, x.new_zeros(x.shape[0], 0), memory_mask)

    def step(self, token: Tensor, decoding: TransformerDecoding) -> tuple[Tensor, TransformerDecoding]:
        """Read token [B], return the next token's logits [B, V]."""
        tokens = torch.cat([decoding.tokens, token[:, None]], dim=1)  # [B, t+1]
        logits = self.decode(tokens, decoding.memory, decoding.memory_mask)  # [B, t+1, V]
        return logits[:, -1], dataclasses.replace(decoding, tokens=tokens)

    def forward(self, x: Tensor, y: Tensor | None = None, sampled: Tensor | None = None) -> Tensor:
        """Logits [B, T_out, V]: teacher-forced on y when given, else greedy decoding.

        Scheduled sampling (`sampled` [B, T_out] True where the decoder should read its own
        previous prediction) takes two passes, as a transformer trains all steps at once
        (Mihaylova & Martins 2019): the predictions of a teacher-forced pass stand in for the
        true previous tokens, then the second pass learns."""
        if y is None:
            return feed_back(self, self.start(x), x.shape[0])
        memory, memory_mask = self.encode(x)
        tokens = teacher_inputs(y)  # [B, T_out]
        if sampled is not None:
            with torch.no_grad():
                guess = self.decode(tokens, memory, memory_mask).argmax(dim=-1)  # [B, T_out]: prediction for step t
            own = torch.cat([tokens[:, :1], guess[:, :-1]], dim=1)  # [B, T_out]: step t reads guess t-1
            tokens = torch.where(sampled, own, tokens)
        return self.decode(tokens, memory, memory_mask)

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The teacher-forced pass itself, hooked: every block's output tapped and every head kept."""
        with recording_blocks(self.cfg, {"encoder": self.encoder, "decoder": self.decoder}, taps) as cache:
            y_hat = self(x, y)
        return Replay(y_hat, cache.stacks, attention=cache.attention)

    def recurrent_stacks(self) -> dict[str, tuple[ModelConfig, nn.Module]]:
        """None: a transformer has no recurrence."""
        return {}

    def describe(self) -> list[Part]:
        """The source's embedding, the position signal (added to source and target alike), the
        encoder's blocks, the target's embedding, the decoder's blocks (self- and cross-attention), head."""
        d, top = self.cfg.hidden_size, self.cfg.num_layers - 1
        return [
            module_part(self, self.source_embedding, "source_embedding", "embedding", "input", ("S",), ("S", d)),
            module_part(self, self.positions, "positions", "positional encoding", "input", ("S", d), ("S", d)),
            *block_parts(self, self.encoder, "encoder", ("S", d), "encoder "),
            module_part(self, self.target_embedding, "target_embedding", "embedding", "input", ("T",), ("T", d)),
            *block_parts(self, self.decoder, "decoder", ("T", d), "decoder "),
            module_part(self, self.head, "head", "linear head", "head", ("T", d), ("T", self.spec.output_size),
                        reads=(Read("decoder", top, None, None, "x"),)),
        ]

    def param_groups(self) -> dict[str, list[str]]:
        """Parameter names by part, for freezing: "source_embedding", "positions" (learned
        only), "encoder layer 0", ..., "target_embedding", "decoder layer 0", ..., "head"."""
        return groups(self.describe())
