"""AttentionEncoderDecoder: at every step the decoder looks at every encoder state h_i.

Luong et al. (2015), scores "dot", "general", "scaled_dot" and "cosine": the current state asks.
    s_t      = RNN(y_{t-1}, s_{t-1})
    alpha_ti = softmax_i(score(s_t, h_i)),   c_t = sum_i alpha_ti h_i
    s~_t     = tanh(W_c [c_t; s_t]),          logits_t = W_s s~_t
Bahdanau et al. (2015), score "additive": the previous state asks, and the decoder reads c_t.
    alpha_ti = softmax_i(score(s_{t-1}, h_i)), c_t = sum_i alpha_ti h_i
    s_t      = RNN([y_{t-1}; c_t], s_{t-1})
    s~_t     = tanh(W_c [c_t; s_t]),           logits_t = W_s s~_t
(Bahdanau's read-out is a maxout layer; the same W_c layer as Luong's keeps the two comparable.)

The encoder's final state still starts the decoder, and a stacked decoder's s_t is its top
layer's state. h_i are in source order even when the encoder reads the source backwards, so
alpha[t, i] always says how much target step t looked at source token i. The states of a
padded source's padding tokens (TaskSpec.pad_id) get alpha_ti = 0: they hold no word of the
source, only how far the encoder had read.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import Tensor, nn

from .attention import Attended, Attention
from .cells import LayerTrace, unroll_layer
from .config import ModelConfig
from .describe import Part, Read, module_part
from .losses import IGNORE
from .recurrent import State, initial_state, layer_weights
from .replay import Replay, StackReplay, Taps, run_stack
from .seq2seq import Decoding, EncoderDecoder, feed_back, teacher_inputs
from .sites import ALIGNMENT
from .tasks.base import TaskSpec


def top_state(state: State) -> Tensor:
    """The top layer's h of a decoder state in nn.LSTM's layout: [B, 1, H']."""
    h = state[0] if isinstance(state, tuple) else state  # [L, B, H']
    return h[-1][:, None]


def cat_steps(parts: list[Tensor | None]) -> Tensor | None:
    return torch.cat(parts) if parts[0] is not None else None


def join_steps(steps: list[LayerTrace]) -> LayerTrace:
    """One layer's one-step traces as the trace of the whole sequence."""
    return LayerTrace(
        h=torch.cat([s.h for s in steps]),  # [T, B, H']
        c=cat_steps([s.c for s in steps]),  # [T, B, H'], LSTM only
        gates={name: torch.cat([s.gates[name] for s in steps]) for name in steps[0].gates},
        h_last=steps[-1].h_last,
        c_last=steps[-1].c_last,
    )


class AttentionEncoderDecoder(EncoderDecoder):
    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__(cfg, spec)
        size = self.decoder_cfg.hidden_size
        self.attention = Attention(cfg.attention, size)
        self.combine = nn.Linear(2 * size, size)  # W_c

    @property
    def looks_back(self) -> bool:
        """Bahdanau's order: attend with s_{t-1}, then step the decoder with the context."""
        return self.cfg.attention == "additive"

    def decoder_input_size(self) -> int:
        extra = self.decoder_cfg.hidden_size if self.looks_back else 0  # Bahdanau's decoder reads c_t
        return self.cfg.embedding_dim + extra

    def head_reads(self) -> tuple[Read, ...]:
        """None directly: the head reads s~_t, W_c's output (see decoder_parts)."""
        return ()

    def decoder_parts(self) -> list[Part]:
        """The decoder's layers with the attention (before them when it asks with s_{t-1}, after
        them when s_t asks) and W_c, which reads [c_t; s_t] for the head."""
        H, top = self.decoder_cfg.hidden_size, self.decoder_cfg.num_layers - 1
        attention = module_part(self, self.attention, "attention", "attention", "core", ("T", H), ("T", H),
                                stack="decoder", score=self.cfg.attention, heads=1)
        combine = module_part(self, self.combine, "combine", "linear", "core", ("T", 2 * H), ("T", H),
                              stack="decoder", reads=(Read("decoder", top, None, None),))
        layers = super().decoder_parts()
        return [attention, *layers, combine] if self.looks_back else [*layers, attention, combine]

    def attentional(self, s: Tensor, c: Tensor) -> Tensor:
        """s~_t = tanh(W_c [c_t; s_t]), Luong et al.'s attentional state: [B, T, H'] twice -> [B, T, H']."""
        return torch.tanh(self.combine(torch.cat([c, s], dim=-1)))

    def output(self, s: Tensor, c: Tensor) -> Tensor:
        """logits = W_s s~_t: [B, T, H'] twice -> [B, T, V]."""
        return self.head(self.attentional(s, c))

    def step(self, token: Tensor, decoding: Decoding) -> tuple[Tensor, Decoding]:
        y_prev = self.target_embedding(token[:, None])  # [B, 1, E]
        if self.looks_back:
            a = self.attention(top_state(decoding.state), decoding.memory, decoding.padded)  # s_{t-1} asks
            s, state = self.decoder(torch.cat([y_prev, a.context[:, 0]], dim=-1), decoding.state)  # [B, 1, H']
        else:
            s, state = self.decoder(y_prev, decoding.state)  # s_t: [B, 1, H']
            a = self.attention(s, decoding.memory, decoding.padded)  # s_t asks
        return self.output(s, a.context[:, 0])[:, 0], dataclasses.replace(decoding, state=state)  # [B, V]

    def head_input(self, decoding: Decoding, y: Tensor) -> Tensor:
        """s~_t of every step, teacher-forced (Luong's order: every step's query at once). [B, T_out, H'].
        Bahdanau's decoder reads c_t at each step, so it decodes a step at a time (teacher_forced)."""
        if self.looks_back:
            raise ValueError("Bahdanau's decoder reads c_t at each step: its outputs come from teacher_forced")
        s, _ = self.decoder(self.target_embedding(teacher_inputs(y)), decoding.state)  # [B, T_out, H']
        a = self.attention(s, decoding.memory, decoding.padded)  # every step's query at once
        return self.attentional(s, a.context[:, 0])

    def teacher_forced(self, decoding: Decoding, y: Tensor) -> Tensor:
        if self.looks_back:  # step t's input holds c_t, which needs s_{t-1}: one step at a time
            return feed_back(self, decoding, y.shape[0], teacher_inputs(y))
        return super().teacher_forced(decoding, y)  # [B, T_out, V]

    def at_targets(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        if self.looks_back:  # the step-at-a-time decoder computes every step's logits as it goes
            chosen = y != IGNORE  # [B, T_out]
            return self.teacher_forced(self.start(x), y)[chosen], y[chosen]  # [N, V], [N]
        return super().at_targets(x, y)

    def replay(self, x: Tensor, y: Tensor, taps: Taps | None = None) -> Replay:
        """The teacher-forced pass through the written-out equations, for engine.record, with
        the alignment alpha[t, i] and context c_t of every step ("alignment")."""
        encoder, out = run_stack("encoder", self.cfg, self.encoder, self.source(x), taps, padded=self.source_padding(x))
        memory = self.in_source_order(out)  # [B, S, H']
        state = self.context(encoder.final_state())
        padded = self.spec.padded(x)  # [B, S]
        y_prev = self.target_embedding(teacher_inputs(y))  # [B, T_out, E]
        if self.looks_back:
            decoder, s, a = self.replay_looking_back(y_prev, state, memory, padded, taps)
        else:
            decoder, s = run_stack("decoder", self.decoder_cfg, self.decoder, y_prev, taps, state)
            a = self.attention(s, memory, padded)
        y_hat = self.output(s, a.context[:, 0])  # [B, T_out, V]
        return Replay(y_hat, {"encoder": encoder, "decoder": decoder}, attention={ALIGNMENT: a})

    def replay_looking_back(self, y_prev: Tensor, state: State, memory: Tensor, padded: Tensor | None,
                            taps: Taps | None):
        """Bahdanau's decoder replayed one step at a time (each step's input needs the step
        before), every layer through unroll_layer with its tap. Returns the decoder's
        StackReplay, its top layer's states [B, T_out, H'] and what it attended to."""
        cfg = self.decoder_cfg
        stack_taps = taps.make("decoder", cfg, y_prev) if taps is not None else None  # [L, 1, T, B, H']
        h = [initial_state(cfg, state, layer, y_prev) for layer in range(cfg.num_layers)]  # (h, c) per layer
        steps: list[list[LayerTrace]] = [[] for _ in range(cfg.num_layers)]
        inputs, looks = [], []
        for t in range(y_prev.shape[1]):
            a = self.attention(h[-1][0][:, None], memory, padded)  # s_{t-1} asks: [B, 1, H']
            layer_in = torch.cat([y_prev[:, t], a.context[:, 0, 0]], dim=-1)[None]  # [1, B, E+H']
            inputs.append(layer_in)
            looks.append(a)
            for layer in range(cfg.num_layers):
                trace = unroll_layer(
                    cfg.arch, layer_weights(self.decoder, layer, 0), layer_in, *h[layer],
                    activation=cfg.activation,
                    taps=stack_taps[layer, 0, t : t + 1] if stack_taps is not None else None,
                )
                h[layer] = (trace.h_last, trace.c_last)
                steps[layer].append(trace)
                layer_in = trace.h  # [1, B, H']
        traces = [[join_steps(layer_steps)] for layer_steps in steps]
        x_in = torch.cat(inputs).transpose(0, 1)  # [B, T_out, E+H']
        attended = Attended(
            context=torch.cat([a.context for a in looks], dim=2),  # [B, 1, T_out, H']
            weights=torch.cat([a.weights for a in looks], dim=2),  # [B, 1, T_out, S]
            logits=torch.cat([a.logits for a in looks], dim=2),  # [B, 1, T_out, S]
        )
        s = traces[-1][0].h.transpose(0, 1)  # [B, T_out, H']
        return StackReplay(cfg, self.decoder, x_in, state, traces), s, attended
