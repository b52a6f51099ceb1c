"""Transfer learning: reuse a trained model's lower parts in a new model for another task.

`transplant` copies the chosen parts ("embedding", "layer 0", ...: the model's param_groups)
from a source model into a target of the same architecture built for its own task, with new
layers on top if it likes (the course's "add extra layers on top of the base"). A part whose
rows are indexed by the vocabulary (the embedding; the head, when both models predict their
own symbols) is copied row by row for the symbols both vocabularies share, so a char LM trained
on Python source gives a review reader its rows for a-z and the space; a row of a symbol the
source never saw keeps its initial value. Every other parameter must have the same shape.

`part_norms` reads what the page shows of each part: its gradient's norm after the latest step
(exactly 0 when frozen: a frozen parameter gets no gradient) and how far it moved from where it
started.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

VOCAB_ROWS = ("embedding", "head")  # parts whose weights have a row per symbol


@dataclass(frozen=True)
class Transplanted:
    """What transplant copied: the parts, and for the vocabulary-indexed ones how many of the
    target's symbols found their row in the source."""

    parts: tuple[str, ...]
    parameters: tuple[str, ...]
    shared_symbols: int  # of the target's input symbols, those the source's embedding has (0 if not copied)
    symbols: int  # the target's input symbols


def symbol_rows(source_vocab, target_vocab) -> tuple[Tensor, Tensor]:
    """(source rows, target rows) [S] of the symbols both vocabularies hold."""
    index = {s: i for i, s in enumerate(source_vocab)}
    pairs = [(index[s], j) for j, s in enumerate(target_vocab) if s in index]
    if not pairs:
        return torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.long)
    source, target = zip(*pairs)
    return torch.tensor(source), torch.tensor(target)


def reads_symbols(model: nn.Module) -> bool:
    """Whether the model's head predicts its own input symbols (a language model)."""
    spec = model.spec
    return spec.input_kind == "tokens" and spec.mapping == "seq2seq" and spec.output_size == spec.input_size


@torch.no_grad()
def transplant(source: nn.Module, target: nn.Module, parts: tuple[str, ...] | list[str]) -> Transplanted:
    """Copy `parts` of source into target (the same architecture; the copied parts' weights the
    same shapes); ValueError naming the part and parameter that cannot be copied, before anything is."""
    if source.cfg.arch != target.cfg.arch:
        raise ValueError(f"the source is {source.cfg.arch.upper()} and the target {target.cfg.arch.upper()}; "
                         "build the target with the source's architecture")
    source_groups, target_groups = source.param_groups(), target.param_groups()
    unknown = [p for p in parts if p not in source_groups or p not in target_groups]
    if unknown:
        raise ValueError(f"no part named {unknown[0]!r} in both models; they share {', '.join(target_groups)}")
    if "head" in parts and not (reads_symbols(source) and reads_symbols(target)) and \
            source.spec.output_size != target.spec.output_size:
        raise ValueError(
            f"the source's head predicts {source.spec.output_size} classes and the target's "
            f"{target.spec.output_size}; reuse the lower parts and train a new head"
        )
    source_params, target_params = dict(source.named_parameters()), dict(target.named_parameters())
    rows = symbol_rows(getattr(source, "vocab", None) or (), getattr(target, "vocab", None) or ())
    copies = []
    for part in parts:
        by_symbol = part in VOCAB_ROWS and (part == "embedding" or reads_symbols(target))
        for name in target_groups[part]:
            if name not in source_params:
                raise ValueError(f"the source has no {name}; build the target with the source's settings")
            s, t = source_params[name], target_params[name]
            if by_symbol and s.shape[1:] == t.shape[1:]:
                copies.append((s, t, rows))
            elif s.shape == t.shape:
                copies.append((s, t, None))
            else:
                raise ValueError(f"{name} is {tuple(s.shape)} in the source and {tuple(t.shape)} in the target")
    for s, t, by in copies:  # checked first, copied after: a refused transplant leaves the target as built
        if by is None:
            t.copy_(s)
        else:
            t[by[1]] = s[by[0]]
    shared = len(rows[1]) if "embedding" in parts else 0
    return Transplanted(tuple(parts), tuple(n for part in parts for n in target_groups[part]), shared,
                        len(getattr(target, "vocab", None) or ()))


def part_norms(model: nn.Module, start: dict[str, Tensor]) -> dict[str, tuple[float, float]]:
    """Per part: (‖gradient‖ after the latest backward pass, ‖θ − θ_start‖), where start holds
    every parameter's value when training began (`snapshot`). A frozen part reads (0.0, 0.0)."""
    params = dict(model.named_parameters())
    norms = {}
    for part, names in model.param_groups().items():
        grads = [params[n].grad for n in names if params[n].grad is not None]  # none while frozen
        moves = [params[n].detach() - start[n] for n in names]
        norms[part] = (joint_norm(grads), joint_norm(moves))
    return norms


def joint_norm(tensors: list[Tensor]) -> float:
    """The L2 norm of all the tensors' entries together; 0.0 for none."""
    if not tensors:
        return 0.0
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(t) for t in tensors])).item()


def snapshot(model: nn.Module) -> dict[str, Tensor]:
    """Every parameter's value now, by name (what part_norms measures movement from)."""
    return {name: p.detach().clone() for name, p in model.named_parameters()}
