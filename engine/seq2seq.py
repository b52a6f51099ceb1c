"""EncoderDecoder: an encoder reads the source, its final state is the context that starts the
decoder, and the decoder writes the target one token at a time (Sutskever et al. 2014; Cho et
al. 2014). Attention over the encoder's states comes with the attention engine.

Target vocabulary convention (set by encdec tasks): token 0 is <sos>, token 1 is <eos>; target
positions after <eos> hold IGNORE and carry no loss.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import Tensor, nn

from .config import MAX_HIDDEN, ModelConfig
from .init import initialise
from .losses import IGNORE
from .model import param_groups
from .recurrent import State, make_recurrent
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


class EncoderDecoder(nn.Module):
    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        self.cfg, self.spec = cfg, spec
        self.decoder_cfg = decoder_config(cfg)
        self.source_embedding = nn.Embedding(spec.input_size, cfg.embedding_dim)
        self.encoder = make_recurrent(cfg, cfg.embedding_dim)
        self.target_embedding = nn.Embedding(spec.output_size, cfg.embedding_dim)
        self.decoder = make_recurrent(self.decoder_cfg, cfg.embedding_dim)
        initialise(self.encoder, cfg)
        initialise(self.decoder, self.decoder_cfg)
        self.head = nn.Linear(self.decoder_cfg.hidden_size, spec.output_size)

    def context(self, h_n: State) -> State:
        """The encoder's final state -> the decoder's initial state, layer by layer: a
        bidirectional encoder's two directions are put side by side. [L*dirs, B, H] -> [L, B, dirs*H]."""
        def join(s: Tensor) -> Tensor:
            L, dirs = self.cfg.num_layers, self.cfg.num_directions
            return s.reshape(L, dirs, *s.shape[1:]).permute(0, 2, 1, 3).reshape(L, s.shape[1], -1)

        return tuple(join(s) for s in h_n) if isinstance(h_n, tuple) else join(h_n)

    def teacher_inputs(self, y: Tensor) -> Tensor:
        """Teacher forcing: the decoder reads <sos>, then the true previous token. [B, T_out]."""
        previous = y[:, :-1].masked_fill(y[:, :-1] == IGNORE, EOS)  # [B, T_out-1]
        return torch.cat([torch.full_like(y[:, :1], SOS), previous], dim=1)  # [B, T_out]

    def forward(self, x: Tensor, y: Tensor | None = None) -> Tensor:
        """Logits [B, T_out, V]: teacher-forced on y when given, else greedy decoding."""
        _, h_n = self.encoder(self.source_embedding(x))
        state = self.context(h_n)
        if y is not None:
            out, _ = self.decoder(self.target_embedding(self.teacher_inputs(y)), state)
            return self.head(out)  # [B, T_out, V]
        return self.greedy(state, x.shape[0])

    def greedy(self, state: State, batch: int) -> Tensor:
        """Feed back the most likely token at every step, for spec.out_len steps."""
        token = torch.full((batch, 1), SOS, dtype=torch.long)  # [B, 1]
        logits = []
        for _ in range(self.spec.out_len):
            out, state = self.decoder(self.target_embedding(token), state)  # [B, 1, H']
            step = self.head(out)  # [B, 1, V]
            logits.append(step)
            token = step.argmax(dim=-1)  # [B, 1]
        return torch.cat(logits, dim=1)  # [B, T_out, V]

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The teacher-forced pass through the written-out equations, for engine.record."""
        encoder, _ = run_stack("encoder", self.cfg, self.encoder, self.source_embedding(x), taps)
        state = self.context(encoder.final_state())
        decoder_in = self.target_embedding(self.teacher_inputs(y))  # [B, T_out, E]
        decoder, out = run_stack("decoder", self.decoder_cfg, self.decoder, decoder_in, taps, state)
        return Replay(self.head(out), {"encoder": encoder, "decoder": decoder})

    def param_groups(self) -> dict[str, list[str]]:
        return param_groups(self)
