"""What the Encoder-decoder page measures beside its maps, each kept in the session until what it
was measured on changes: a translation model's held-out BLEU, and the "Attention aligns" lesson's
count of year digits that look at themselves."""
from __future__ import annotations

import weakref

import pandas as pd
import streamlit as st

from app.charts import bleu as bleu_chart
from app.charts import runs
from app.charts.architectures import legend_under
from app.charts.style import finish
from app.session import decoding, pretrained
from app.session.lab import Lab
from app.widgets import length_lesson, state
from app.widgets.figures import show
from engine import bleu

PAGE_SENTENCES = 300  # held-out sentences the page decodes: every one of the preset's 260; 1 s for the translator


def bleu_over_training(curve: list[tuple[int, float]]):
    """Greedy held-out BLEU at each held-out evaluation the page measured (step, BLEU)."""
    log = pd.DataFrame({"run": "greedy", "step": [s for s, _ in curve], "bleu": [b for _, b in curve]})
    fig = runs.over_training(log, "bleu", "held-out BLEU (0-100)", y_format=".1f")
    fig.update_xaxes(range=[0, max(25, int(log["step"].max())) * 1.04])  # one point at step 0 spanned -1 to 1
    # from 0: an untrained model's BLEU of 0 alone drew its point over an axis of 0 to 0.006
    fig.update_yaxes(range=[0, max(1.0, float(log["bleu"].max()) * 1.1)])
    return legend_under(finish(fig, "Held-out BLEU over training"))


def held_out_bleu(lab: Lab) -> None:
    """A translation model's corpus BLEU on its task's held-out sentences, every translation of each
    a reference (engine.bleu): greedy, measured with each held-out evaluation the page sees (every
    EVAL_EVERY steps, and after going back to the best step), so a playing page pays for it once
    every 25 steps (0.1 s for the preset's 260 sentences), and drawn over training beside the loss;
    with the beam's width, when asked (1.5 s). On the first PAGE_SENTENCES of them: the 2017 corpus
    holds out 9,856, which the shipped translator's card scores all of."""
    if not lab.trainable:  # its weights never move here: its card scored every held-out sentence, once
        card_bleu(lab)
        return
    held = lab.held_out.log.last
    if held is None:
        return
    kept = state.get(state.BLEU)
    if kept is None or kept[0]() is not lab.trainer or kept[1] is not held:
        scores = {1: bleu.held_out_bleu(lab.model, lab.task, sentences=PAGE_SENTENCES)}
        curve = kept[4] if kept is not None and kept[0]() is lab.trainer else []  # a new model: a new curve
        curve = [*curve, (lab.trainer.steps_done, scores[1])]
        kept = st.session_state[state.BLEU] = (weakref.ref(lab.trainer), held, lab.trainer.steps_done, scores, curve)
    _, _, step, scores, curve = kept
    if lab.trainable:  # a shipped model that does not train here has one point, at the step it opened at
        show(bleu_over_training(curve), "attention_bleu_curve")
    width = state.get(state.BEAM_WIDTH, 3)
    if width > 1 and width not in scores and st.button(
            f"Held-out BLEU with a beam of {width}", key="attention.bleu_beam",
            help="decodes the sentences scored by beam search, one at a time: 1.5 s for the preset's 260 at width 3"):
        scores[width] = bleu.held_out_bleu(lab.model, lab.task, width, sentences=PAGE_SENTENCES)
    measured = "; ".join(f"{'greedy' if w == 1 else f'beam of {w}'} {score:.1f}" for w, score in sorted(scores.items()))
    sentences = len(lab.task.references)
    scored = lab.task.references[:PAGE_SENTENCES]
    which = (f"the {sentences:,} English sentences held out" if len(scored) == sentences else
             f"the first {len(scored):,} of the {sentences:,} English sentences held out (a fair subset: the split "
             "is shuffled)")
    st.caption(f"Held-out BLEU at {lab.step_said(step)} (sacrebleu, 0-100, on {which}, their "
               f"{sum(map(len, scored)):,} French translations as references): {measured}. An empty "
               "translation scores 0.")


def card_bleu(lab: Lab) -> None:
    """A shipped model that reads but does not train: the held-out BLEU its card gives (every held-out sentence,
    greedy and with a beam of 3, and on the sentences of 1-10 words), where decoding the page's 300 took most of
    its first run (benchmarks/README section 25)."""
    metrics = pretrained.named(lab.origin).metrics
    short = (f"; on the sentences of 1-10 words {metrics['BLEU, greedy, 1-10 words']:.1f} and "
             f"{metrics['BLEU, beam 3, 1-10 words']:.1f}" if "BLEU, greedy, 1-10 words" in metrics else "")
    st.caption(f"Held-out BLEU, as its card measured it (sacrebleu, 0-100, on all {len(lab.task.references):,} "
               f"English sentences held out, every translation of each a reference): greedy "
               f"{metrics['BLEU, greedy']:.1f}, beam of 3 {metrics['BLEU, beam 3']:.1f}{short}. Its weights do not "
               "move here, so these stand.")


def bleu_by_length(lab: Lab) -> None:
    """A translator's greedy held-out BLEU by English sentence length, when asked (on the first bleu.PER_LENGTH
    sentences of each length: 6 s for the shipped translator), kept until its weights move: Bahdanau et al.'s
    (2015) Figure 2, for the model on this page. While the length lesson is open, beside it the lesson's shipped
    pair of seed 0 measured here, over the range of BLEU its six runs measured."""
    if len(bleu.length_groups(lab.task.reference_lengths)) < 2:  # one span (the 5,000 short pairs): no line
        return
    kept = state.get(state.BLEU_BY_LENGTH)
    measured_on = (lab.trainer.steps_done, lab.held_out.log.last)  # going back to the best step logs a new row
    if kept is not None and (kept[0]() is not lab.trainer or kept[1] != measured_on):
        kept = None
    lesson = state.get(state.LESSON) == length_lesson.KEY
    pair_too = ", and about 10 s for the lesson's pair, once a server" if lesson else ""
    if kept is None and st.button("Held-out BLEU by sentence length", key="attention.bleu_by_length",
                                  help=f"decodes the first {bleu.PER_LENGTH} held-out sentences of each length "
                                       f"greedily (about 6 s for the shipped translator{pair_too})"):
        measured = bleu.bleu_by_length(lab.model, lab.task, most=bleu.PER_LENGTH)
        kept = st.session_state[state.BLEU_BY_LENGTH] = (weakref.ref(lab.trainer), measured_on, measured)
    if kept is None:
        return
    _, (step, _), measured = kept
    counted = ", ".join(f"{n:,} of {low}-{high} words" for (low, high), (n, _) in measured.items())
    if lesson:
        length_lesson.figure(lab, step, measured, counted)
        return
    show(bleu_chart.over_length({"this model, greedy": measured}), "attention_bleu_by_length")
    st.caption(f"At {lab.step_said(step)}, each point the corpus BLEU of the first held-out English sentences of "
               f"that many words ({counted}; a fair subset, the split is shuffled), greedy. Bahdanau et al. (2015, "
               "Figure 2) drew this for encoder-decoders with and without attention: without it, BLEU fell as "
               "sentences grew longer, the whole sentence squeezed through one vector; with it, BLEU held up to "
               "the longest.")


def year_digits(lab: Lab) -> None:
    """The "Attention aligns" lesson's count, on the page's probe samples: of their year digits, how
    many look hardest at that very digit of the source. Counted while the recording drawn is of the
    weights as they are (a whole-page run, or a tick that renewed it: every sample recorded at one
    step); between renewals the count of the last one, with its step."""
    x, y = lab.probes.samples
    kept = state.get(state.YEAR_DIGITS)
    if kept is not None and kept[0]() is not lab.probes:  # counted on another model
        kept = None
    if lab.probes.recorded_at == lab.trainer.steps_done and (kept is None or kept[1] != lab.probes.recorded_at):
        counted = decoding.year_digits_on_themselves(lab.task, x, y, [lab.recording(i) for i in range(len(x))])
        kept = st.session_state[state.YEAR_DIGITS] = (weakref.ref(lab.probes), lab.probes.recorded_at, *counted)
    if kept is None:
        return
    _, step, hits, digits = kept
    st.caption(f"At step {step:,}, {hits} of the {digits} year digits of the {len(x)} probe samples "
               f"({hits / digits:.0%}) look hardest at that very digit of the source: the alignment has learnt "
               "where each comes from.")
