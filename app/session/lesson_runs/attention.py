"""The Encoder-decoder page's lessons: a Lab with attention, and the same without ("none"), each
trained as the page trains it; the alignment read on the page's probe samples."""
from __future__ import annotations

import torch

from app.session import pretrained
from app.session.decoding import year_digits_on_themselves
from app.session.lab import Lab
from app.session.lesson_runs import Measured, first_step, measures_for, seeded
from app.session.lesson_runs.recurrent import held_out, trained, with_model
from app.session.lessons import BY_KEY
from engine.sites import ALIGNMENT, POINTER


def with_and_without(key: str, seed: int) -> tuple[Lab, Lab, Measured]:
    """The lesson's Lab and its twin with the score "none", trained to the lesson's budget, and their
    held-out curves and final scores measured."""
    lesson = BY_KEY[key]
    setup = seeded(lesson.setup, seed)
    labs = {"attention": trained(Lab(setup), lesson.steps),
            "none": trained(Lab(with_model(setup, attention=None)), lesson.steps)}
    out = Measured()
    for name, lab in labs.items():
        metric = held_out(lab).metric
        out.values[f"{name}.accuracy_end"] = float(metric.iloc[-1])
        out.add_curves(name, held_out(lab), ("metric",), lab.setup)
    return labs["attention"], labs["none"], out


@measures_for("attention-aligns")
def attention_aligns(seed: int) -> Measured:
    lab, _, out = with_and_without("attention-aligns", seed)
    x, y = lab.probes.samples  # the page's probe samples, as the page counts them
    hits, digits = year_digits_on_themselves(lab.task, x, y, [lab.recording(i) for i in range(len(x))])
    out.values["attention.year_digits_on_themselves"] = hits / digits
    return out


@measures_for("bottleneck")
def bottleneck(seed: int) -> Measured:
    lab, _, out = with_and_without("bottleneck", seed)
    length = BY_KEY["bottleneck"].setup.task_params["seq_len"]
    weights = lab.recording(0).attention_traces[ALIGNMENT].weights[0]  # [T_out, S]
    on_diagonal = (weights[:length].argmax(dim=1) == torch.arange(length)).float().mean()
    out.values["attention.on_diagonal"] = float(on_diagonal)
    return out


@measures_for("pointer-sorts")
def pointer_sorts(seed: int) -> Measured:
    lesson = BY_KEY["pointer-sorts"]
    lab = trained(Lab(seeded(lesson.setup, seed)), lesson.steps)
    metric = held_out(lab).metric
    pointer = lab.recording(0).attention_traces[POINTER].weights[0]  # [T_out, 1 + n]: the end marker, then x_j
    out = Measured({"pointer.accuracy_end": float(metric.iloc[-1]),
                    "pointer.above_0.9": first_step(metric, metric > 0.9),
                    "pointer.is_permutation": float(sorted(pointer.argmax(dim=1).tolist())
                                                    == list(range(pointer.shape[1]))),
                    "pointer.weakest_row_max": float(pointer.max(dim=1).values.min())})
    out.add_curves("pointer", held_out(lab), ("metric",), lab.setup)
    return out


@measures_for("length")
def length(seed: int) -> Measured:
    """The live slice, with attention and without, trained to the lesson's budget (held-out word accuracy); and
    the shipped pair of small translators built from this seed (2,500 steps each), scored by sentence length."""
    _, _, out = with_and_without("length", seed)
    for run, card in pretrained.lesson_pair("length", seed).items():
        scored = {span: score for span, (_, score) in pretrained.bleu_by_length(card).items()}
        for (low, high), score in scored.items():
            out.values[f"shipped_{run}.bleu_{low}_{high}"] = score
        # What sentences of 11-15 words keep of the shortest ones' BLEU (16-20 words: about 60 held-out sentences)
        out.values[f"shipped_{run}.kept_11_15"] = scored[11, 15] / scored[1, 5]
    return out
