"""Where attention happens in a model (a Site), and what one attention did there (an AttentionTrace).

A recording keys its attention traces by Site, a structured key the pages can filter on (every
cross-attention, the decoder's layers...), and each Site has the display label the pages and
notebooks print: "layer 0 self" (a transformer's only stack), "encoder layer 1 self",
"decoder layer 0 cross", "alignment" (a recurrent decoder's attention over the encoder's states),
"pointer" (a pointer network's output: its attention over the input positions).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from torch import Tensor

SITE_KINDS = ("self", "cross", "alignment", "pointer")
ALONE_KINDS = ("alignment", "pointer")  # a recurrent decoder's one attention: its kind is its label


@dataclass(frozen=True)
class Site:
    """stack: the recording's stack that asks ("encoder", "decoder"); layer: its block (None for
    a recurrent decoder's one alignment or pointer); kind: "self", "cross", "alignment" or
    "pointer"; alone: the model's only stack, which its label leaves unnamed."""

    stack: str
    layer: int | None
    kind: str
    alone: bool = False

    def __post_init__(self) -> None:
        if self.kind not in SITE_KINDS:
            raise ValueError(f"kind must be one of {', '.join(SITE_KINDS)}; got {self.kind!r}")

    @property
    def label(self) -> str:
        if self.kind in ALONE_KINDS:
            return self.kind
        stack = "" if self.alone else f"{self.stack} "
        return f"{stack}layer {self.layer} {self.kind}"


ALIGNMENT = Site("decoder", None, "alignment")
# A pointer network's output distribution, p(C_t = j) = alpha_tj: [T_out, positions + 1], key 0
# the end marker (<eos>) and key 1 + j input position j.
POINTER = Site("decoder", None, "pointer")


@dataclass(frozen=True)
class AttentionTrace:
    """One attention layer on one sample, every head kept apart (a recurrent decoder's has one)."""

    site: Site
    weights: Tensor  # [heads, T_q, T_k]  alpha: each row sums to 1, masked keys exactly 0
    # The softmax's input ([heads, T_q, T_k], masked entries -inf): a transformer's is already
    # divided by sqrt(d_k), so times sqrt(d_k) shows it unscaled.
    logits: Tensor
    context: Tensor  # [heads, T_q, d_v]  sum_i alpha_i v_i, before any output projection


class ByLabel(Mapping):
    """A read-only view of one field of every trace, by display label:
    rec.attention["decoder layer 0 cross"] is that trace's weights."""

    def __init__(self, traces: dict[Site, AttentionTrace], field: str):
        self.traces = {site.label: trace for site, trace in traces.items()}
        self.field = field

    def __getitem__(self, label: str) -> Tensor:
        if label not in self.traces:
            known = ", ".join(self.traces) or "none: this model has no attention"
            raise KeyError(f"no attention named {label!r}; this recording has {known}")
        return getattr(self.traces[label], self.field)

    def __iter__(self) -> Iterator[str]:
        return iter(self.traces)

    def __len__(self) -> int:
        return len(self.traces)
