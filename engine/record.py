"""engine.record: replay one sample on the model's own weights and open it up.

The model trains on PyTorch's kernels, which keep neither gates nor per-step gradients. To open
it up we replay the one sample layer by layer, with a zero "tap" added to every h_t: the gradient
of the loss with respect to those taps is the total BPTT gradient dL/dh_t. The replay is
`unroll_layer`'s written-out equations, except for nn.LSTM and nn.RNN, whose own kernels give the
same states, gates and gradients faster (engine/fused_replay.py).
Nothing is hooked into the model, and the model's weights, .grad, requires_grad flags and
train/eval mode are exactly as they were afterwards, even if recording fails.
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import partial

import torch
from torch import Tensor, nn

from .arguments import check_batch_shape, check_model
from .attention import Attended
from .cells import GATE_COUNT, GATE_NAMES, LayerTrace, unroll_layer
from .losses import compute_loss
from .padding import real_steps
from .recording import BlockTrace, Recording, StackTrace
from .recurrent import initial_state, layer_weights
from .replay import StackReplay, Taps
from .sites import AttentionTrace, Site
from .spectra import Spectra, spectral_norms, weight_spectra
from .truncated import check_truncation, replay_truncated


@contextmanager
def opened(model: nn.Module):
    """Eval mode, autograd on and every parameter differentiable for the replay (even inside a
    caller's no_grad or inference_mode); every module's mode and every parameter's flag
    restored after."""
    modes = [m.training for m in model.modules()]
    flags = [p.requires_grad for p in model.parameters()]
    try:
        with torch.inference_mode(False), torch.enable_grad():
            model.eval()  # dropout off: the recording shows the network as it predicts
            for p in model.parameters():
                p.requires_grad_(True)
            yield
    finally:
        for m, mode in zip(model.modules(), modes):
            m.training = mode
        for p, flag in zip(model.parameters(), flags):
            p.requires_grad_(flag)


# J_t for every t is T*H*H numbers, but they are never all held (each segment's are reduced to
# norms before the next), so this bounds the time a page waits, not the memory: the replay of H
# copies and an SVD cost ~H^3 a step; at the limit, 2.8 s of CPU (T=2000, H=128) and 3.8 s (T=512, H=256).
MAX_JACOBIAN_ENTRIES = 2**25
# Activations of one segment's graph (steps x H copies x gate units), which sets the segment's
# length: 64 steps at H=64 for an LSTM, 16 at H=128. The memory is then bounded by the segment,
# whatever T: peak RSS +71-89 MB at H=64, 128 and 256 and T up to 2000 (the whole-sequence
# replay before it: +248 MB at T=2000, H=64). Longer segments measured no faster.
GRAPH_BUDGET = 2**20


def jacobian_norms(stack: StackReplay) -> Tensor:
    """||dh_T/dh_t||_2 for every layer, direction and t: [L, dirs, T].

    Within one layer and direction, with that layer's inputs held fixed; "T" is the direction's
    last step (position 0 for a backward direction). For an LSTM this is the derivative through
    h_t alone, with c_t held: the h-to-h block of the chained (h, c) state Jacobian.
    """
    cfg, x_in = stack.cfg, stack.x_in
    H, T = cfg.hidden_size, x_in.shape[1]
    if T * H * H > MAX_JACOBIAN_ENTRIES:
        raise ValueError(
            f"jacobian_norm at T={T}, H={H} is {T * H * H:,} matrix entries, more than a page can wait for; "
            "record with jacobians=False, or use a shorter sequence or a smaller hidden size"
        )
    length = max(1, GRAPH_BUDGET // (H * H * GATE_COUNT[cfg.arch]))  # steps per segment
    norms = torch.zeros(cfg.num_layers, cfg.num_directions, T, dtype=x_in.dtype)  # [L, dirs, T]
    layer_in = x_in.detach()[0]  # [T, D]
    for layer in range(cfg.num_layers):
        for direction in range(cfg.num_directions):
            norms[layer, direction] = direction_norms(stack, layer, direction, layer_in, length)  # [T]
        layer_in = torch.cat([t.h[:, 0] for t in stack.traces[layer]], dim=1).detach()  # [T, dirs*H]
    return norms


def segments(T: int, length: int, reverse: bool) -> list[range]:
    """The steps 0..T-1 cut into runs of `length`, in the order backpropagation visits them: from the
    direction's last step (T-1, or 0 for a backward direction) back to its first."""
    runs = [range(start, min(start + length, T)) for start in range(0, T, length)]
    return runs if reverse else runs[::-1]


def state_after(trace: LayerTrace, step: int, h0: Tensor, c0: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """h_step and c_step as the recording's replay computed them ([1, H] each), or the initial state
    where `step` is before the direction's first."""
    if not 0 <= step < len(trace.h):
        return h0, c0
    return trace.h[step], trace.c[step] if trace.c is not None else None


def direction_norms(stack: StackReplay, layer: int, direction: int, layer_in: Tensor, length: int) -> Tensor:
    """||J_t||_2 of one layer and direction: [T].

    The steps are replayed as a batch of H copies, one per row of the identity backpropagated from
    h_T, a segment at a time from the last: one backward pass gives those rows of J_t = dh_T/dh_t
    for every t of the segment, and of dh_T/dh_s (and dh_T/dc_s) for the state s the segment started
    from, which seeds the backward pass of the segment before (J_t = dh_T/dh_s . dh_s/dh_t, plus the
    same through c_s). Every step is replayed once, and only one segment's graph is ever held.
    The segments start from the states the recording's own replay went through.
    """
    cfg, x_in = stack.cfg, stack.x_in
    H, T, reverse = cfg.hidden_size, x_in.shape[1], direction == 1
    trace = stack.traces[layer][direction]
    h0, c0 = initial_state(cfg, stack.state, layer * cfg.num_directions + direction, x_in)  # [1, H]
    real = real_steps(stack.padded)  # [T, 1] or None: pads are carried through, as in the replay
    w = layer_weights(stack.rnn, layer, direction)
    seeds = [torch.eye(H, dtype=x_in.dtype)]  # [H, H]: row r of dh_T/dh_T, backpropagated by copy r
    if c0 is not None:
        seeds.append(torch.zeros(H, H, dtype=x_in.dtype))  # h_T does not depend on c_T (held)
    norms = torch.empty(T, dtype=x_in.dtype)  # [T]
    for steps in segments(T, length, reverse):
        before = steps.stop if reverse else steps.start - 1  # the step whose state the segment starts from
        start = [s.detach().expand(H, -1).clone().requires_grad_()  # each [H, H]: one copy per row
                 for s in state_after(trace, before, h0, c0) if s is not None]
        taps = torch.zeros(len(steps), H, H, dtype=x_in.dtype, requires_grad=True)  # [k, H, H]
        seg = unroll_layer(
            cfg.arch,
            w,
            layer_in[steps.start : steps.stop, None, :].expand(-1, H, -1),  # [k, H, D]
            *start,
            activation=cfg.activation,
            reverse=reverse,
            taps=taps,
            keep_gates=False,
            real=real[steps.start : steps.stop].expand(-1, H) if real is not None else None,  # [k, H]
        )
        ends = [seg.h_last, seg.c_last][: len(seeds)]
        jac, *seeds = torch.autograd.grad(ends, [taps, *start], seeds)  # [k, H, H]: J_t; each [H, H]
        norms[steps.start : steps.stop] = spectral_norms(jac)  # [k]: NaN where J_t is not finite
    return norms


def stack_field(traces: list[list[LayerTrace]], get) -> Tensor:
    """[L, dirs, T, H] from one [T, 1, H] field of every trace."""
    return torch.stack([torch.stack([get(t)[:, 0] for t in row]) for row in traces]).detach()


def stack_trace(stack, grad_taps: Tensor, jacobians: bool, spectra: Spectra | None) -> StackTrace | BlockTrace:
    if not isinstance(stack, StackReplay):  # a transformer's blocks: no recurrence, no W_hh
        return stack.trace(grad_taps)
    gates = {name: stack_field(stack.traces, lambda t, n=name: t.gates[n]) for name in GATE_NAMES[stack.cfg.arch]}
    return StackTrace(
        hidden=stack_field(stack.traces, lambda t: t.h),
        cell=stack_field(stack.traces, lambda t: t.c) if stack.cfg.arch == "lstm" else None,
        gates=gates,
        grad_h=grad_taps[:, :, :, 0].detach(),  # [L, dirs, T, H]
        jacobian_norm=jacobian_norms(stack) if jacobians else None,
        spectra=spectra,
        pad_mask=stack.padded[0].clone() if stack.padded is not None else None,  # [T], in the stack's reading order
    )


def record(model: nn.Module, x: Tensor, y: Tensor, index: int = 0, *, jacobians: bool = True,
           bptt_window: int = 0, spectra: bool = False, written_out: bool = False) -> Recording:
    """Everything the pages plot, for sample `index` of the batch (x, y).

    bptt_window > 0 records the gradients as truncated BPTT computes them when training with
    TrainConfig(bptt_window=...): the state carried forward but detached every `bptt_window`
    steps, so dL/dh_t (and dL/dW) hold only the loss terms of h_t's own chunk (for a seq2vec task,
    nothing before the last chunk), and the loss is the sum of the chunks' terms the Trainer adds
    up. The forward pass, and so h_t, the gates and y_hat, are those of full BPTT; jacobian_norm
    is the model's own, uncut. A window of T or more is full BPTT, as in training.

    spectra=True adds the eigenvalues and singular values of every W_hh block (engine.weight_spectra,
    which has a size limit and refuses a non-finite W_hh); they depend on the weights only, so a
    caller recording many samples of one model may rather take them once from weight_spectra.

    An nn.LSTM or nn.RNN stack is recorded through its own kernel (engine/fused_replay.py);
    written_out=True replays it through the written-out equations instead, as every other stack
    is: the reference the tests hold the kernel path to.
    """
    check_model(model)
    check_batch_shape(model.spec, x, y)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(x):
        raise ValueError(f"index must be between 0 and {len(x) - 1} (the batch has {len(x)} samples), got {index}")
    check_truncation(model.cfg, model.spec.mapping, bptt_window)
    spectra_of = weight_spectra(model) if spectra else {}  # first: a refusal costs no replay
    xs, ys = x[index : index + 1], y[index : index + 1]
    with opened(model):
        taps = Taps(written_out)
        if bptt_window and bptt_window < xs.shape[1]:
            replay, loss = replay_truncated(model, xs, ys, taps, bptt_window, partial(compute_loss, model.spec.loss))
        else:
            replay = model.replay(xs, ys, taps)
            loss = compute_loss(model.spec.loss, replay.y_hat, ys)
        names, params = zip(*model.named_parameters())
        grads = torch.autograd.grad(loss, [*taps.by_stack.values(), *params], allow_unused=True)
        grad_taps = dict(zip(taps.by_stack, grads))  # stack name -> [L, dirs, T, 1, H]
        grad_params = grads[len(taps.by_stack) :]
        stacks = {
            name: stack_trace(stack, grad_taps[name], jacobians, spectra_of.get(name))
            for name, stack in replay.stacks.items()
        }
    return Recording(
        arch=model.cfg.arch,
        x=xs[0],
        y=ys[0],
        y_hat=replay.y_hat.detach()[0],
        loss=loss.item(),
        stacks=stacks,
        param_grad_norm={
            n: (g.norm().item() if g is not None else 0.0) for n, g in zip(names, grad_params)
        },
        attention_traces=attention_traces(replay.attention),
    )


def attention_traces(attended: dict[Site, Attended]) -> dict[Site, AttentionTrace]:
    """A replay's attention, for its one sample: each field [heads, T_q, ...]."""
    return {
        site: AttentionTrace(site, a.weights.detach()[0], a.logits.detach()[0], a.context.detach()[0])
        for site, a in attended.items()
    }
