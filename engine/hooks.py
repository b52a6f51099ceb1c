"""Recording a transformer through named hook points (TransformerLens' hook_points.py and
run_with_cache are the model): the forward pass runs every value worth recording through an
identity `HookPoint`, and `recording_blocks` attaches hooks there for one forward pass, inside a
context manager that always removes them. So the recording is the forward pass itself, not a
second copy of it that could drift.

Recurrent layers are replayed instead (engine/replay.py): the fused kernel hides its internals.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .attention import Attended
from .config import ModelConfig
from .recording import BlockTrace
from .replay import Taps
from .sites import Site


class HookPoint(nn.Module):
    """The identity, at a named place of the forward pass where a hook may read (or replace) the value."""

    def forward(self, x: Tensor) -> Tensor:
        return x


@contextmanager
def hooked(hooks: list[tuple[nn.Module, Callable]]) -> Iterator[None]:
    """Forward hooks registered on each module for the duration of the block, removed after
    however the block ends."""
    handles = []
    try:
        for module, hook in hooks:
            handles.append(module.register_forward_hook(hook))
        yield
    finally:
        for handle in handles:
            handle.remove()


@dataclass
class BlockStackReplay:
    """A stack of transformer blocks as recorded: every block's output (with its tap added)."""

    outputs: list[Tensor] = field(default_factory=list)  # per block: [B, T, d]

    def trace(self, grad_taps: Tensor) -> BlockTrace:
        """This stack's trace: each block's output x_t (the residual stream) and dL/dx_t there."""
        return BlockTrace(
            hidden=torch.stack([out.detach()[0] for out in self.outputs])[:, None],  # [L, 1, T, d]
            grad_h=grad_taps[:, :, :, 0].detach(),  # [L, 1, T, d]
        )


@dataclass
class BlockCache:
    """What one hooked forward pass left: every stack's block outputs and every attention."""

    stacks: dict[str, BlockStackReplay] = field(default_factory=dict)
    parts: dict[Site, dict[str, Tensor]] = field(default_factory=dict)  # site -> logits, weights, context

    @property
    def attention(self) -> dict[Site, Attended]:
        return {site: Attended(**parts) for site, parts in self.parts.items()}


@contextmanager
def recording_blocks(cfg: ModelConfig, stacks: dict[str, nn.ModuleList], taps: Taps | None) -> Iterator[BlockCache]:
    """Within the block, a forward pass keeps every block's output (a zero tap added to it, made
    in `taps` as [L, 1, T, B, d] when the stack's first block runs, so the loss's gradient there
    can be recorded) and every attention's logits, weights and context, by Site."""
    cache = BlockCache()
    hooks = []
    for stack, blocks in stacks.items():
        cache.stacks[stack] = BlockStackReplay()
        for layer, block in enumerate(blocks):
            hooks.append((block.hook_out, tap_hook(cfg, cache, taps, stack, layer)))
            for kind, attention in block.attentions().items():
                site = Site(stack, layer, kind, alone=len(stacks) == 1)
                kept = cache.parts.setdefault(site, {})
                for name in ("logits", "weights", "context"):
                    hooks.append((getattr(attention, f"hook_{name}"), keep_hook(kept, name)))
    with hooked(hooks):
        yield cache


def tap_hook(cfg: ModelConfig, cache: BlockCache, taps: Taps | None, stack: str, layer: int) -> Callable:
    def hook(module: nn.Module, inputs, out: Tensor) -> Tensor:  # out: [B, T, d]
        if taps is not None:
            if layer == 0:
                taps.make(stack, cfg, out)  # [L, 1, T, B, d]
            out = out + taps.by_stack[stack][layer, 0].transpose(0, 1)  # [B, T, d]
        cache.stacks[stack].outputs.append(out)
        return out

    return hook


def keep_hook(kept: dict[str, Tensor], name: str) -> Callable:
    def hook(module: nn.Module, inputs, out: Tensor) -> None:
        kept[name] = out

    return hook
