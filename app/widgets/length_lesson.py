"""The length lesson's figure on the Encoder-decoder page (Bahdanau et al. 2015, Figure 2): held-out BLEU by English
sentence length of the lesson's shipped translators with attention and without (the range of their seeds, from
its ensemble), seed 0's pair measured on this server, and the page's own model."""
from __future__ import annotations

import streamlit as st

from app.charts import bleu as bleu_chart
from app.session import ensembles, pretrained
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.widgets.figures import show

KEY = "length"
RUN_NAMES = {"attention": "with attention", "none": "without attention"}  # the lesson's shipped runs, as drawn


@st.cache_resource(show_spinner="Measuring the lesson's pair of seed 0 on its held-out sentences…")
def shipped_pair_by_length() -> dict[str, bleu_chart.Spans]:
    """The length lesson's shipped translators of seed 0, each's BLEU by length as its ensemble measures it: once
    a server (the same shipped bytes give every session the same figures; about 10 s, benchmarks/README section 25)."""
    return {run: pretrained.bleu_by_length(card) for run, card in pretrained.lesson_pair(KEY, 0).items()}


def same_sentences(lab: Lab) -> bool:
    """Whether the page's model holds out the sentences seed 0's pair is scored on: its split follows the task's
    corpus, its longest sentence and its seed (not its vocabulary)."""
    params = pretrained.lesson_pair(KEY, 0)["attention"].fields["task"]["params"]
    return (lab.setup.train.seed == 0 and getattr(lab.task, "corpus", None) == params["corpus"]
            and getattr(lab.task, "max_words", None) == params["max_words"])


def figure(lab: Lab, step: int, measured: bleu_chart.Spans, counted: str) -> None:
    """The range of BLEU by length over the lesson's shipped runs with attention and without, seed 0's pair
    measured here over them, and the page's model (`measured` at `step`, on the sentences `counted` says)."""
    ensemble = ensembles.shipped(KEY)
    pair = shipped_pair_by_length()
    ranges = {RUN_NAMES[run]: {(low, high): ensemble.value_range(f"shipped_{run}.bleu_{low}_{high}")
                               for low, high in pair[run]} for run in RUN_NAMES}
    lines = {f"seed 0 {RUN_NAMES[run]}, measured here": pair[run] for run in RUN_NAMES}
    seeds = sorted({member["seed"] for member in ensemble.members})
    show(bleu_chart.over_length({**lines, "your model, greedy": measured}, ranges, f"range of {len(seeds)} seeds"),
         "attention_bleu_by_length")
    other = ("" if same_sentences(lab) else
             f" Your model holds out other sentences than seed 0's pair (its seed {lab.setup.train.seed} or its "
             "longest sentence differ: the split follows both), so its points score other sentences.")
    st.caption(f"Shaded: for each, the range of the lesson's {len(seeds)} shipped translators (seeds "
               f"{', '.join(map(str, seeds))}, each trained 2,500 steps; the lesson's {ensemble.describe()}); the "
               "lines: seed 0's pair measured on this server, and your model at "
               f"{lab.step_said(step)}. Each point is the corpus BLEU of the first held-out English sentences of "
               f"that many words ({counted}; a fair subset, the split is shuffled), greedy.{other} As in Bahdanau "
               "et al.'s (2015) Figure 2, the translator without attention loses more of its BLEU as the sentences "
               "grow: the whole sentence passes through the encoder's last state. "
               + BY_KEY[KEY].caption("bleu_by_length"))
