"""The generation lesson on Generate (app/data/lessons/22-generation.toml): the student's text's repetition
(seq-rep-4) beside each decoding rule's, as measured over the lesson's ensemble."""
from __future__ import annotations

import streamlit as st

from app.charts import generation as charts
from app.session import ensembles
from app.session.generation import LESSON_LENGTH, LESSON_PROMPT, LESSON_RULES, Generated, how_written
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.widgets.figures import show
from engine.repetition import seq_rep

KEY = "generation"


def figure(lab: Lab, generated: Generated) -> None:
    lesson, ensemble = BY_KEY[KEY], ensembles.shipped(KEY)
    measured = {how_written(sampling): ensemble.value_range(f"{name}.seq_rep_4")
                for name, sampling in LESSON_RULES.items()}
    value = seq_rep(generated.continuation)
    yours = None if value is None else (how_written(generated.sampling), value)
    show(charts.repetition_by_rule(measured, yours), "gen_repetition")
    same = (lab.origin == lesson.shipped and generated.step == 0 and how_written(generated.sampling) in measured
            and generated.text[:generated.prompt_length] == LESSON_PROMPT
            and len(generated.continuation) == LESSON_LENGTH)
    written = ("fewer than four words, so no 4-word sequence to count" if value is None else
               f"{value:.0%} of its 4-word sequences repeat an earlier one")
    st.caption(f"Your text, written {how_written(generated.sampling)}: {written}. Grey: each rule's as measured "
               f"over the lesson's runs (the shipped model, {LESSON_LENGTH} characters after “{LESSON_PROMPT}”, "
               "sampling seeds 0-2 on two CPU kernel paths). "
               + ("Your text was written the lesson's way, so it compares like with like." if same else
                  f"Your text was not written the lesson's way (the shipped model as shipped, the prompt "
                  f"“{LESSON_PROMPT}”, {LESSON_LENGTH} characters, one of the rules drawn): it may differ for that "
                  "reason too.")
               + " " + lesson.caption("repetition"))
