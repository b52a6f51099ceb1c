"""The BERT and GPT page's first read-out: a sentence with one <mask>, each model's guess for it (the
causal model reads the words left of the mask only, and shows it), and what each word of the
sentence may attend to in each model."""
from __future__ import annotations

import streamlit as st

from app.charts import bert_gpt as charts
from app.session.bert_gpt import CAUSAL, MASKED, Readers
from app.widgets import state
from app.widgets.figures import show
from app.widgets.literal import literal
from engine.contextual import EXAMPLE, MaskGuess, attention_of, guess_mask, read_sentence
from engine.tasks.masked_lm import MASK, SPECIALS, UNK

SHOWN = 10  # words of each guess drawn
HEADS = {"each layer's mean of heads": True, "every head": False}


def section(readers: Readers, colours: dict[str, str]) -> None:
    st.markdown("#### Guess the hidden word")
    st.session_state.setdefault(state.BERT_MASKED, EXAMPLE)
    text = st.text_input("A sentence with one <mask> where the hidden word goes", key=state.BERT_MASKED,
                         max_chars=400, help=f"Lower or upper case; at most {readers.task.seq_len} words, the "
                                             "<mask> counted. Words the models do not know are read as <unk>.")
    try:
        sentence = read_sentence(readers.task, text, masked=True)
    except ValueError as err:
        st.error(f"This sentence cannot be read: {literal(err)}.", icon=":material/edit:")
        return
    st.caption(f"Read by {readers.about}." + unknown_note(sentence.unknown))
    columns = st.columns(2)
    for column, name in zip(columns, (MASKED, CAUSAL)):
        with column, readers.lock:
            guessed(readers, name, text, list(sentence.words), colours[name])
    attention(readers, sentence.ids, list(sentence.words))


def guessed(readers: Readers, name: str, text: str, words: list[str], colour: str) -> None:
    """One model's guess: what it read, and its most probable words."""
    try:
        guess = guess_mask(readers.models[name], readers.task, text)
    except ValueError as err:
        st.warning(f"The {name} model cannot guess here: {literal(err)}.", icon=":material/info:")
        return
    st.markdown(f"**{name}** reads: " + read_line(guess, words))
    best = guess.top(SHOWN)
    word, p = best[0]
    show(charts.guesses(best, colour, f"{name}: its {SHOWN} likeliest words"), f"bert_guess_{name.split()[0]}")
    side = ("both sides of the mask" if guess.both_sides
            else "the words before the mask only, as if the sentence ended there")
    st.caption(f"Its softmax over all {len(guess.vocab):,} words at the mask, having read {side}: "
               f"'{word}' at {p:.1%}.")


def read_line(guess: MaskGuess, sentence: list[str]) -> str:
    """The sentence (its words, "<mask>" for the mask) as the model read it: every word, or the words
    before the mask with the rest struck through (never read)."""
    words = [f"`{w}`" if w == SPECIALS[MASK] else literal(w) for w in sentence]
    if guess.both_sides:
        return " ".join(words)
    at = len(guess.reads)
    struck = " ".join(f"~~{w}~~" for w in words[at + 1:])
    return " ".join(words[:at]) + f" `<mask>` {struck} *(struck: never read)*"


def unknown_note(unknown: tuple[str, ...]) -> str:
    if not unknown:
        return ""
    return f" Not among the models' words, so read as {SPECIALS[UNK]}: {', '.join(literal(w) for w in unknown)}."


def attention(readers: Readers, ids, tokens: list[str]) -> None:
    """Each model's attention over the sentence, side by side: the masked model's every word reads
    every word; the causal model's upper triangle is masked (exactly 0, grey)."""
    st.markdown("#### What each word may attend to")
    shown = st.radio("Maps", tuple(HEADS), key=state.BERT_HEADS, horizontal=True)
    with readers.lock:
        traces = {name: attention_of(readers.models[name], ids).attention_traces for name in (MASKED, CAUSAL)}
    show(charts.attention_pair(traces, tokens, HEADS[shown]), "bert_attention")
    st.caption("Row: the word that asks (query); column: the word it reads (key); each row sums to 1. In the causal "
               "model every word above the diagonal is masked (grey, weight exactly 0): no word reads a later one, "
               "which is why GPT's guess for the mask could use only the words before it. The masked model has no "
               "such triangle: BERT's words read both sides.")
