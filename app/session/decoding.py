"""An encoder-decoder's decoding of one probe sample (or of a source the student typed), the
three ways the Attention page shows it: teacher-forced (the recording, reading the true y_{t-1}),
free running (reading its own previous guess), and beam search. No Streamlit here.

Free running is recorded exactly: greedy decoding feeds back the token it chose, so replaying
the decoder teacher-forced on its own greedy output is the free run, and engine.record gives its
attention row by row like any recording.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

import engine
from engine.losses import IGNORE
from engine.seq2seq import EOS
from engine.sites import AttentionTrace, Site


@dataclass(frozen=True)
class FreeRun:
    tokens: tuple[int, ...]  # what the decoder wrote, up to and with its first <eos>
    rec: engine.Recording  # the replay on those tokens: its attention, logits, loss
    right: bool | None  # the whole sequence equals the target; None: a typed source, which has none


def alignment_site(rec: engine.Recording) -> Site:
    """Where the decoder looks at the source: a recurrent decoder's alignment, a pointer network's
    pointer, or a transformer decoder's last cross-attention."""
    kinds = {"alignment": 0, "pointer": 0, "cross": 1}
    sites = [s for s in rec.attention_traces if s.kind in kinds]
    if not sites:
        raise ValueError("this model has no attention over the source: its decoder sees only the encoder's "
                         "final state")
    return max(sites, key=lambda s: (kinds[s.kind], s.layer or 0))


def first_rows(trace: AttentionTrace, rows: int) -> AttentionTrace:
    """The trace's first `rows` output steps (a free run that wrote <eos> early)."""
    return dataclasses.replace(trace, weights=trace.weights[:, :rows], logits=trace.logits[:, :rows],
                               context=trace.context[:, :rows])


def looked_at(trace: AttentionTrace) -> torch.Tensor:
    """[T_k] bool: the keys some query may look at; False at a padded source's padding (logit
    -inf, weight exactly 0 in every row)."""
    return ~torch.isneginf(trace.logits).all(dim=0).all(dim=0)  # [T_k]


def without_padding(trace: AttentionTrace, keys: list[str]) -> tuple[AttentionTrace, list[str], int]:
    """The trace and key words without the keys no query may look at (looked_at), and how many
    were left out. At 1024 px a date's ten padding columns took half of each map."""
    shown = looked_at(trace)  # [T_k]
    kept = dataclasses.replace(trace, weights=trace.weights[:, :, shown], logits=trace.logits[:, :, shown],
                               context=trace.context)
    return kept, [k for k, keep in zip(keys, shown.tolist(), strict=True) if keep], int((~shown).sum())


def free_run(model, x: torch.Tensor, y: torch.Tensor | None, index: int) -> FreeRun:
    """Decode sample `index` of x greedily and record the decoder on what it wrote. x, y: the
    probe batch ([N, S] / [N, S, D] and [N, T_out]); y None: sources with no target (a typed one)."""
    written = engine.beam_search(model, x[index], width=1).best.tokens
    ys = torch.full((len(x), model.spec.out_len), EOS) if y is None else y.clone()  # [N, T_out]
    out_len = ys.shape[1]
    padded = list(written) + [EOS] * (out_len - len(written))  # the replay needs out_len targets
    ys[index] = torch.tensor(padded[:out_len], dtype=ys.dtype)
    rec = engine.record(model, x, ys, index=index, jacobians=False)
    return FreeRun(tuple(written), rec, None if y is None else tuple(written) == tuple(y[index].tolist()))


def reads_text(task: engine.Task) -> bool:
    """An encoder-decoder whose task can encode text a student types as a source (dates, translate)."""
    return hasattr(task, "encode") and task.spec.mapping == "encdec" and task.spec.input_kind == "tokens"


def typed_source(task: engine.Task, text: str) -> torch.Tensor:
    """Text a student typed as the source the model reads ([S] token ids; the spaces around it
    dropped), or a ValueError saying what to change: an empty text, or the task's own refusal
    (a character it does not know, a source longer than its limit)."""
    if not text.strip():
        raise ValueError("there is nothing but spaces to read; type a source for the model to rewrite")
    return task.encode(text.strip())  # [S]


def as_typed(task: engine.Task, x: torch.Tensor) -> str:
    """One source ([S] token ids) as a student would type it: its symbols without the padding (a
    task that decodes its own sources, as dates and translate do, says it: a sentence without its
    end marker </s>)."""
    if hasattr(task, "decode"):
        return task.decode(x)
    return task.symbol_separator.join(s for s in task.symbols_of(x) if s != task.pad_symbol)


def unknown_words(task: engine.Task, text: str) -> list[str]:
    """The words of a typed source the model's vocabulary lacks, each once in order (a translation
    model reads them as <unk>); [] for a task that reads characters."""
    if not hasattr(task, "unknown_words"):
        return []
    return list(dict.fromkeys(task.unknown_words(text)))


def target_length(y: torch.Tensor) -> int:
    """How many output steps of a target row y [T_out] hold a token: up to and with its <eos>; a
    translation's shorter sentences have IGNORE after it (no loss, no word to show)."""
    return int((y != IGNORE).sum())


def target_words(task: engine.Task) -> tuple[str, ...]:
    """The text of each output class; a pointer network's "position j" as x_j, the name its input
    has on the same figures (source_words), short enough for a tick under a narrow map."""
    return tuple(word.replace("position ", "x") for word in task.target_vocab)


def source_words(task: engine.Task, x: torch.Tensor, site: Site) -> list[str]:
    """What the decoder at `site` looks at, for one sample, as text: the source's symbols, or its
    values; a pointer network's keys start with its end marker (engine/pointer.py)."""
    symbols = task.symbols_of(x)
    if symbols is None:  # values: named x_j, their values said by input_values
        symbols = [f"x{j}" for j in range(len(x))]
    return ["<eos>", *symbols] if site.kind == "pointer" else list(symbols)


def input_values(task: engine.Task, x: torch.Tensor) -> str:
    """A sample of values as text for a caption ("x0 = 0.52, x1 = 0.21, ..."); "" for symbols."""
    if task.symbols_of(x) is not None:
        return ""
    return ", ".join(f"x{j} = {v:.2f}" for j, v in enumerate(x.reshape(len(x), -1)[:, 0].tolist()))


YEAR_DIGITS = 4  # a date rewritten as YYYY-MM-DD starts with the year's four digits


def year_digits_on_themselves(task: engine.Task, x: torch.Tensor, y: torch.Tensor,
                              recordings: list[engine.Recording]) -> tuple[int, int]:
    """Of the year digits the samples' targets y [B, T_out] start with, how many look hardest (the
    teacher-forced alignment's largest weight, head 0) at that very digit of their source x [B, S]:
    (hits, digits). recordings[b] is sample b's recording: the "Attention aligns" lesson's figure."""
    hits = 0
    for b, rec in enumerate(recordings):
        weights = rec.attention_traces[alignment_site(rec)].weights[0]  # [T_out, S]
        source = task.symbols_of(x[b])
        hits += sum(source[int(weights[t].argmax())] == task.target_vocab[int(y[b, t])] for t in range(YEAR_DIGITS))
    return hits, YEAR_DIGITS * len(recordings)
