"""The transformer (Vaswani et al. 2017): blocks of attention and a position-wise feed-forward
layer, each sublayer wrapped in a residual connection and layer norm ("Add & Norm", post-norm
as in the paper).

    SelfAttentionBlock  x = LN(x + SelfAttn(x)); x = LN(x + FF(x))
                        with no mask: an encoder block (BERT); with the causal mask: a GPT block
    DecoderBlock        x = LN(x + MaskedSelfAttn(x)); x = LN(x + CrossAttn(x, memory)); x = LN(x + FF(x))

`TransformerModel` is one stack of self-attention blocks for the seq2vec, seq2seq and vec2seq
tasks, encoder-only (cfg.bidirectional) or decoder-only (causal); `TransformerEncoderDecoder`
(transformer_seq2seq.py) is the full encoder-decoder. Every block's output and every head's
attention pass through hook points (engine/hooks.py), where `replay` records the forward pass
itself: each block's output x_t with the loss's gradient there, and every head's weights. The
blocks ask for no weights, so they train on the fused kernel; hooking the hook points (as `replay`
does) writes the attention out (engine/multihead.py).
"""
from __future__ import annotations

import torch
from torch import Tensor, nn

from .attention import causal_mask, padding_mask
from .config import ModelConfig
from .describe import Part, Read, Shape, groups, module_part
from .hooks import HookPoint, recording_blocks
from .losses import IGNORE
from .multihead import MultiHeadAttention
from .positional import Positions
from .replay import Replay, Taps
from .tasks.base import TaskSpec


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, the same at every position."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.W_2(torch.relu(self.W_1(x)))  # [B, T, d]


class SelfAttentionBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.hidden_size
        self.self_attention = MultiHeadAttention(d, cfg.num_heads, cfg.attention_scale)
        self.norm_1 = nn.LayerNorm(d)
        self.feed_forward = FeedForward(d, cfg.feedforward_size)
        self.norm_2 = nn.LayerNorm(d)
        self.dropout = nn.Dropout(cfg.dropout)
        self.hook_out = HookPoint()  # the block's output, x_t of the residual stream

    def attentions(self) -> dict[str, MultiHeadAttention]:
        return {"self": self.self_attention}

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        a, _ = self.self_attention(x, x, x, mask, need_weights=False)  # [B, T, d]
        x = self.norm_1(x + self.dropout(a))  # [B, T, d]
        x = self.norm_2(x + self.dropout(self.feed_forward(x)))  # [B, T, d]
        return self.hook_out(x)


class DecoderBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.hidden_size
        self.self_attention = MultiHeadAttention(d, cfg.num_heads, cfg.attention_scale)
        self.norm_1 = nn.LayerNorm(d)
        self.cross_attention = MultiHeadAttention(d, cfg.num_heads, cfg.attention_scale)
        self.norm_2 = nn.LayerNorm(d)
        self.feed_forward = FeedForward(d, cfg.feedforward_size)
        self.norm_3 = nn.LayerNorm(d)
        self.dropout = nn.Dropout(cfg.dropout)
        self.hook_out = HookPoint()  # the block's output, x_t of the residual stream

    def attentions(self) -> dict[str, MultiHeadAttention]:
        return {"self": self.self_attention, "cross": self.cross_attention}

    def forward(self, x: Tensor, memory: Tensor, mask: Tensor, memory_mask: Tensor | None = None) -> Tensor:
        """x [B, T, d] the target so far, memory [B, S, d] the encoder's output; memory_mask
        (broadcasting to [B, heads, T, S]) hides the source's padding."""
        a, _ = self.self_attention(x, x, x, mask, need_weights=False)  # [B, T, d]: earlier target positions
        x = self.norm_1(x + self.dropout(a))  # [B, T, d]
        a, _ = self.cross_attention(x, memory, memory, memory_mask, need_weights=False)  # [B, T, d]: the source
        x = self.norm_2(x + self.dropout(a))  # [B, T, d]
        x = self.norm_3(x + self.dropout(self.feed_forward(x)))  # [B, T, d]
        return self.hook_out(x)


def run_blocks(blocks: nn.ModuleList, x: Tensor, **block_args) -> Tensor:
    """Every block in turn: [B, T, d] -> [B, T, d]."""
    for block in blocks:
        x = block(x, **block_args)  # [B, T, d]
    return x


def token_or_value_embedding(spec: TaskSpec, d_model: int) -> nn.Module:
    """Tokens: a learned vector each. Values: a linear map of each step's features to d_model."""
    if spec.input_kind == "tokens":
        return nn.Embedding(spec.input_size, d_model)
    return nn.Linear(spec.input_size, d_model)


class TransformerModel(nn.Module):
    """Embedding + positions -> num_layers self-attention blocks -> linear read-out, in the
    task's mapping: the read-out at the last position (seq2vec) or at every position.

    cfg.bidirectional: every position attends to all (an encoder, for classification and
    tagging); otherwise to itself and the past only (a decoder, for language models and every
    causal task, which a recurrent network would read left to right). Either way no position
    attends to the input's padding (TaskSpec.pad_id)."""

    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        self.cfg, self.spec = cfg, spec
        self.vocab: tuple[str, ...] | None = None  # set by build_model from the task
        self.embedding = token_or_value_embedding(spec, cfg.hidden_size)
        self.positions = Positions(cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(SelfAttentionBlock(cfg) for _ in range(cfg.num_layers))
        self.head = nn.Linear(cfg.hidden_size, spec.output_size)

    @property
    def stack_name(self) -> str:
        return "encoder" if self.cfg.bidirectional else "decoder"

    def inputs(self, x: Tensor) -> Tensor:
        """What the first block reads: [B, T, d], the embedding plus the position signal."""
        if self.spec.mapping == "vec2seq":
            x = x.unsqueeze(1).expand(-1, self.spec.out_len, -1)  # [B, D] -> [B, T, D]
        if x.shape[1] == 0:
            raise ValueError("the input sequence is empty; give at least one position")
        return self.dropout(self.positions(self.embedding(x)))  # [B, T, d]

    def mask(self, x: Tensor, x_in: Tensor) -> Tensor | None:
        """The self-attention mask for the input x, read as x_in [B, T, d]: None, the causal
        [T, T], or with padding [B, 1, 1, T] (encoder) or [B, 1, T, T] (causal)."""
        causal, padded = not self.cfg.bidirectional, self.spec.padded(x)  # padded: [B, T]
        if padded is not None:
            return padding_mask(padded, causal, x_in.dtype)
        return causal_mask(x_in.shape[1], x_in.dtype) if causal else None

    def readout(self, out: Tensor) -> Tensor:
        """seq2vec: the head at the last position ([B, out]), which a causal stack needs (it is
        the only one that has seen every token) and an encoder may as well use; else at every
        position ([B, T, out])."""
        if self.spec.mapping == "seq2vec":
            return self.head(out[:, -1])  # [B, out]
        return self.head(out)  # [B, T, out]

    def forward(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """y_hat for x (y is taken and ignored, as by SequenceModel)."""
        x_in = self.inputs(x)
        return self.readout(run_blocks(self.blocks, x_in, mask=self.mask(x, x_in)))

    def at_targets(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """The head at the positions with a target only: (logits [N, out], their targets [N]) for the N
        entries of y [B, T] that are not IGNORE. Their loss and accuracy are forward's with IGNORE's positions
        left out, for the head's work on those positions alone: a masked language model scores 15% of them
        (its output layer over 4,000 words took most of a step, and 31 MB a tensor, computed for every position)."""
        x_in = self.inputs(x)
        out = run_blocks(self.blocks, x_in, mask=self.mask(x, x_in))  # [B, T, d]
        chosen = y != IGNORE  # [B, T]
        return self.head(out[chosen]), y[chosen]  # [N, out], [N]

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The forward pass itself, hooked: every block's output tapped and every head kept."""
        with recording_blocks(self.cfg, {self.stack_name: self.blocks}, taps) as cache:
            y_hat = self(x, y)
        return Replay(y_hat, cache.stacks, attention=cache.attention)

    def recurrent_stacks(self) -> dict[str, tuple[ModelConfig, nn.Module]]:
        """None: a transformer has no recurrence."""
        return {}

    def describe(self) -> list[Part]:
        """Embedding, position signal, every block, head (at the last position for seq2vec)."""
        cfg, spec, d = self.cfg, self.spec, self.cfg.hidden_size
        T = spec.out_len if spec.mapping == "vec2seq" else "T"
        read = (T,) if spec.input_kind == "tokens" else (T, spec.input_size)
        ends = spec.mapping == "seq2vec"
        head = module_part(self, self.head, "head", "linear head", "head", (d,) if ends else (T, d),
                           (spec.output_size,) if ends else (T, spec.output_size),
                           reads=(Read(self.stack_name, cfg.num_layers - 1, None, -1 if ends else None, "x"),))
        return [
            module_part(self, self.embedding, "embedding", "embedding", "input",
                        (spec.input_size,) if spec.mapping == "vec2seq" else read, (T, d)),
            module_part(self, self.positions, "positions", "positional encoding", "input", (T, d), (T, d)),
            *block_parts(self, self.blocks, self.stack_name, (T, d)),
            head,
        ]

    def param_groups(self) -> dict[str, list[str]]:
        """Parameter names by part, for freezing: "embedding", "positions" (learned only),
        "layer 0", ..., "head"."""
        return groups(self.describe())


def block_parts(model: nn.Module, blocks: nn.ModuleList, stack: str, shape: Shape, prefix: str = "") -> list[Part]:
    """One part per block of a stack, each reading and writing `shape` ([T, d])."""
    return [
        module_part(model, block, f"{prefix}layer {i}", "transformer block", "core", shape, shape, stack=stack,
                    layer=i, layers=len(blocks), score="scaled_dot" if block.self_attention.scale else "dot",
                    heads=block.self_attention.num_heads)
        for i, block in enumerate(blocks)
    ]
