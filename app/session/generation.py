"""Text a student's language model writes after a prompt, kept with what the Generate page shows
of it: the model's next-character scores at every position and its hidden units over the text,
from one recording of the whole text (engine.record). No Streamlit here."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

import engine
from app.session import pretrained
from app.session.lab import Lab
from engine.sampling import Sampling, context_logits, context_window, generate
from engine.tasks.features import char_features

MAX_PROMPT, MAX_LENGTH = 500, 1000  # characters: a recording of 1,500 steps stays well under a second
# The generation lesson (app/data/lessons/22-generation.toml): its prompt and length, and the rules its card
# compares, each at the page's own defaults (a temperature of 0.8, top-p's mass 0.9, a beam of 4).
LESSON_PROMPT, LESSON_LENGTH = "ROMEO:", 300
LESSON_RULES = {"greedy": Sampling("greedy"), "beam": Sampling("beam", width=4),
                "sample": Sampling("sample", temperature=0.8), "top_p": Sampling("top-p", temperature=0.8, p=0.9)}


@dataclass(frozen=True)
class Generated:
    """prompt + continuation, and the model as it read them (at `step`)."""

    text: str
    prompt_length: int
    sampling: Sampling
    seed: int
    step: int  # the training step of the model that wrote it
    logits: torch.Tensor  # [T - 1, V]: the scores of the character after each one but the last, as the
    # generator read them (a transformer longer than its window: from the window ending there)
    units: dict[str, torch.Tensor]  # "layer 0 h", "layer 0 c", "block 1 output"...: each [T - 1, H]

    @property
    def continuation(self) -> str:
        """What the model wrote after the prompt."""
        return self.text[self.prompt_length:]

    @property
    def read(self) -> list[str]:
        """The characters the model read, one per row of `logits` and `units`."""
        return list(self.text[:-1])

    def features(self) -> dict[str, np.ndarray]:
        """What a reader of the text counts at each character read (quotes, brackets, indentation...)."""
        return char_features(self.read)


def write(lab: Lab, prompt: str, length: int, sampling: Sampling, seed: int) -> Generated:
    """`length` characters after `prompt` from the lab's model, then its recording over the whole
    text. ValueError (nothing changed) for a prompt it cannot read or a model that is no language
    model. The caller holds the lab (Lab.hold) so no training step runs meanwhile."""
    if not prompt:
        raise ValueError("the prompt is empty: type at least one character for the model to start from")
    if len(prompt) > MAX_PROMPT or not 1 <= length <= MAX_LENGTH:
        raise ValueError(f"a prompt of at most {MAX_PROMPT:,} characters and 1 to {MAX_LENGTH:,} more, please")
    if not hasattr(lab.task, "encode") or lab.task.spec.name != "charlm":
        raise ValueError("generating text needs a character language model (the char LM task)")
    window = lab.task.seq_len  # a transformer reads at most the windows it trained on (engine.sampling)
    ids = generate(lab.model, lab.task.encode(prompt), length, sampling, torch.Generator().manual_seed(seed),
                   window)  # [T]
    rec = engine.record(lab.model, ids[None, :-1], ids[None, 1:], jacobians=False)
    text = "".join(lab.task.vocab[i] for i in ids.tolist())
    logits = rec.y_hat.detach()  # [T - 1, V]: one pass over the whole text
    cropped = context_window(lab.model, window)
    if cropped is not None and len(ids) - 1 > cropped:  # a transformer read only its last window: those scores
        logits = context_logits(lab.model, ids, window)
    return Generated(text, len(prompt), sampling, seed, lab.trainer.steps_done, logits, units_of(rec))


def how_written(s: Sampling) -> str:
    """A decoding rule and its settings in words: "greedily", "sampling at temperature 0.8", ..."""
    return {"greedy": "greedily", "sample": f"sampling at temperature {s.temperature:g}",
            "top-k": f"top-k (k = {s.k}, T = {s.temperature:g})",
            "top-p": f"top-p (p = {s.p:g}, T = {s.temperature:g})", "beam": f"beam search (width {s.width})"}[s.method]


def default_prompt(task: engine.Task) -> str:
    """What the prompt box starts with: a play's speaker for a model of Shakespeare, else Python's "def "."""
    return LESSON_PROMPT if getattr(task, "corpus", None) == "shakespeare" else "def "


def network(cfg: engine.ModelConfig) -> str:
    """A model's shape in words: "a 2-layer LSTM of 256 units", "a transformer of 4 blocks, d_model 128"."""
    if cfg.arch == "transformer":
        return f"a transformer of {cfg.num_layers} block{'s' * (cfg.num_layers > 1)}, d_model {cfg.hidden_size}"
    return f"a {cfg.num_layers}-layer {cfg.arch.upper()} of {cfg.hidden_size} units"


def counted(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("s" if n != 1 else "")


def trained_on(lab: Lab) -> str:
    """What the lab's language model learnt from, for the Generate page: a shipped checkpoint's
    corpus and split as its card states them (and any steps trained here since, on the lab's
    task), else the lab's own task's text (CharLMTask.trained_on)."""
    steps = lab.trainer.steps_done
    if lab.origin is None:
        trained = f"trained {counted(steps, 'step')} on" if steps else "not trained yet: it trains on"
        return f"This model is {network(lab.setup.model)}, {trained} {lab.task.trained_on()}."
    card = pretrained.named(lab.origin)
    data, trained = card.fields["data"], card.fields["training"]["steps"]
    # the lab's own text only if it trained on it: a shipped model opened before its corpus is here has none yet
    since = f"; since, {counted(steps, 'more step')} here on {lab.task.trained_on()}" if steps else ""
    return (f"This model is the shipped {card.title} ({card.name}: {network(lab.setup.model)}), trained "
            f"{trained:,} steps on {data['what']}, {data['trained on']} (held out: {data['held out']}){since}.")


@dataclass(frozen=True)
class CodeShape:
    """How much a text looks like Python: of the brackets it opens, how many it closes (by the
    matching bracket, innermost first), and of the lines it starts, how many are indented (open
    with at least four spaces)."""

    opened: int
    closed: int
    lines: int
    indented: int


def code_shape(text: str) -> CodeShape:
    pairs, waiting, opened, closed = dict(zip(")]}", "([{")), [], 0, 0
    for ch in text:
        if ch in "([{":
            waiting.append(ch)
            opened += 1
        elif ch in pairs and waiting and waiting[-1] == pairs[ch]:
            waiting.pop()
            closed += 1
    starts = text.split("\n")[1:]  # the lines begun after a newline (the first one belongs to the prompt)
    lines = [line for line in starts if line.strip()]  # a blank line is neither
    return CodeShape(opened, closed, len(lines), sum(line.startswith("    ") for line in lines))


# What the shipped char-LSTM (pretrained/charlm-lstm) writes, by measured_shape's defaults; the
# Generate page says it under a text that model wrote untouched, and tests/app/test_generate_page.py
# measures it.
SHIPPED_SHAPE = ("Measured on this shipped model: at temperature 0.5, 50 texts of 300 characters close about 86% "
                 "of the brackets they open and indent about 93% of the lines they begin; characters drawn one by "
                 "one from the corpus's frequencies close 35% and indent 1%.")


def measured_shape(model: torch.nn.Module, task: engine.Task, texts: int = 50, length: int = 300,
                   temperature: float = 0.5, seed: int = 0) -> tuple[CodeShape, CodeShape]:
    """The code shape, summed over `texts` texts of `length` characters the model writes after a
    newline at `temperature`, and over as many drawn from the corpus's character frequencies."""
    def total(shapes: list[CodeShape]) -> CodeShape:
        return CodeShape(*(sum(getattr(s, f) for s in shapes) for f in ("opened", "closed", "lines", "indented")))

    generator, newline = torch.Generator().manual_seed(seed), task.encode("\n")
    written = [generate(model, newline, length, Sampling("sample", temperature), generator) for _ in range(texts)]
    lm = total([code_shape("".join(task.vocab[i] for i in ids.tolist())) for ids in written])
    generator.manual_seed(seed)
    return lm, total([code_shape("\n" + unigram_text(task, length, generator)) for _ in range(texts)])


def unigram_text(task: engine.Task, length: int, generator: torch.Generator) -> str:
    """`length` characters drawn one by one from the corpus's character frequencies: the
    baseline that knows which characters Python uses, but not in which order."""
    counts = torch.bincount(task.ids, minlength=len(task.vocab)).double()  # [V]
    draws = torch.multinomial(counts, length, replacement=True, generator=generator)  # [length]
    return "".join(task.vocab[i] for i in draws.tolist())


def units_of(rec: engine.Recording) -> dict[str, torch.Tensor]:
    """Every layer's units over the text: a recurrent layer's h_t (and an LSTM's c_t), a
    transformer block's output; each [T, H]."""
    units = {}
    for trace in rec.stacks.values():
        block = not hasattr(trace, "cell")
        for layer in range(trace.hidden.shape[0]):
            if block:
                units[f"block {layer} output"] = trace.hidden[layer, 0]  # [T, d_model]
                continue
            units[f"layer {layer} h"] = trace.hidden[layer, 0]  # [T, H]: a language model reads one way
            if trace.cell is not None:
                units[f"layer {layer} c"] = trace.cell[layer, 0]
    return units
