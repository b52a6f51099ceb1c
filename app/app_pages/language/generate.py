"""Generate: the student's character language model writes after a prompt (greedy, temperature,
top-k, top-p, beam search); the distribution over the next character at any position, at any
temperature; and the text coloured by one unit, with the units that follow quotes, brackets,
indentation and the position in the line found for the student (Karpathy et al. 2015)."""
from __future__ import annotations

import html

import streamlit as st

import engine
from app.charts import generation as charts
from app.charts.labels import visible
from app.charts.unroll_time import coloured_tokens
from app.session import pretrained
from app.session.generation import (
    MAX_LENGTH,
    MAX_PROMPT,
    SHIPPED_SHAPE,
    Generated,
    default_prompt,
    how_written,
    trained_on,
    write,
)
from app.session.lab import Lab
from app.session.link import preset_setup
from app.widgets import decoding_lesson, state
from app.widgets.corpus_needed import corpus_needed
from app.widgets.figures import show
from app.widgets.header import page_header
from app.widgets.literal import literal
from app.widgets.open_model import open_button
from app.widgets.pretrained import open_shipped
from engine.sampling import METHODS, Sampling
from engine.units import correlated_units

CHAR_LM = preset_setup("charlm")
SHIPPED = "charlm-lstm"  # pretrained/: the char-LSTM the page offers ready trained (SHIPPED_SHAPE measures it)
# ... and the one trained on Tiny Shakespeare (the corpus "shakespeare" of engine.datasets: char-rnn's file, which
# the page needs only to train it further or score it)
SHAKESPEARE = "charlm-shakespeare-lstm"
HOW = {
    "greedy": "greedy: always the most likely character",
    "sample": "sample at a temperature",
    "top-k": "sample among the k most likely",
    "top-p": "sample among the most likely, up to mass p (nucleus)",
    "beam": "beam search: the most likely continuation a beam finds",
}


def run() -> None:
    lab = page_header("Generate text")
    st.markdown(
        "A character language model gives, after every character it reads, a probability for each character "
        "that could come next. To write, pick one, feed it back, and repeat. *How* you pick changes the text: "
        "always the most likely (greedy) loops; sampling at temperature T draws from softmax(z / T), flatter "
        "above 1 and sharper below; top-k and top-p draw only among the likeliest.")
    if not writes_text(lab):
        return
    if lab.trainer.steps_done == 0 and lab.origin is None:
        python = lab.task.corpus == "python" and lab.task.text is None
        st.warning("This model has not trained yet: it writes noise. Press Play on Build & Train for a few hundred "
                   "steps" + (" (about 1.3 nats of loss reads like Python)" if python else "") + ", then come back.",
                   icon=":material/school:")
    st.caption(trained_on(lab))
    missing = lab.corpus_missing
    if missing is not None:
        corpus_needed(missing, "Training this model further, and its held-out score, need it; it writes below "
                               "without it.", "generate")
    if state.get(state.LESSON) == decoding_lesson.KEY:  # its question is about greedy text: the rule it opens on
        st.session_state.setdefault(state.GEN_METHOD, "greedy")
    request(lab)
    generated = state.get(state.GEN_RESULT)
    if generated is None:
        return
    text(lab, generated)
    if state.get(state.LESSON) == decoding_lesson.KEY:
        decoding_lesson.figure(lab, generated)
    next_character(lab, generated)
    units(generated)


def writes_text(lab: Lab) -> bool:
    """A character language model that reads left to right, or what to open instead."""
    cfg = lab.setup.model
    next_character = engine.TASKS[lab.setup.task].writes_text
    if next_character and not cfg.bidirectional:
        return True
    why = ("reads both ways: it saw each character it would predict" if next_character
           else f"works on the {lab.setup.task} task, which is not predicting the next character of a text")
    st.info(f"Your model {why}. Open a character-level LSTM trained on Python's own source or on Shakespeare, or "
            "an untrained one to train on Build & Train yourself (each replaces your model):", icon=":material/info:")
    row = st.container(horizontal=True)  # each button as wide as its label, wrapping: three columns cut them at 1024
    if row.button("Open the trained char-LSTM", key="generate.shipped", width="content", type="primary",
                  icon=":material/download:") and open_shipped(lab, pretrained.named(SHIPPED)):
        st.rerun()
    if row.button("Open the char-LSTM trained on Shakespeare", key="generate.shakespeare", width="content",
                  icon=":material/theater_comedy:") and open_shipped(lab, pretrained.named(SHAKESPEARE)):
        st.rerun()
    open_button(lab, "Open an untrained one (the char LM preset)", CHAR_LM, 1000, key="generate.open", where=row,
                width="content")
    return False


def request(lab: Lab) -> None:
    """The prompt and how to pick each character, applied by the form's button."""
    with st.form("generate", border=False):
        st.text_area("Prompt", value=default_prompt(lab.task), key=state.GEN_PROMPT, persist_state="session",
                     max_chars=MAX_PROMPT, height=80,
                     help="the text the model reads first; characters its corpus never has are refused")
        how, length, seed = st.columns([3, 1, 1])
        # its value in the session, not an index too: the generation lesson sets greedy there, and a widget given
        # both logged Streamlit's warning
        st.session_state.setdefault(state.GEN_METHOD, "sample")
        method = how.selectbox("How to pick each character", METHODS, format_func=HOW.get, key=state.GEN_METHOD,
                               persist_state="session")
        length.number_input("Characters", 1, MAX_LENGTH, 300, step=50, key=state.GEN_LENGTH, persist_state="session")
        seed.number_input("Seed", 0, 2**31 - 1, 0, key=state.GEN_SEED, persist_state="session",
                          help="the same seed draws the same text")
        temperature, k, p, width = st.columns(4)
        temperature.slider("Temperature T", 0.1, 2.0, 0.8, 0.05, key=state.GEN_TEMPERATURE, persist_state="session",
                           help="sample, top-k, top-p: softmax(z / T)")
        k.number_input("k (top-k)", 1, 200, 10, key=state.GEN_K, persist_state="session")
        p.slider("p (top-p)", 0.05, 1.0, 0.9, 0.05, key=state.GEN_P, persist_state="session")
        width.number_input("Beam width", 1, 16, 4, key=state.GEN_WIDTH, persist_state="session")
        pressed = st.form_submit_button("Generate", type="primary", icon=":material/edit_note:")
    if pressed:
        try:
            sampling = Sampling(method, state.get(state.GEN_TEMPERATURE), int(state.get(state.GEN_K)),
                                float(state.get(state.GEN_P)), int(state.get(state.GEN_WIDTH)))
            with lab.hold():
                generated = write(lab, state.get(state.GEN_PROMPT), int(state.get(state.GEN_LENGTH)), sampling,
                                  int(state.get(state.GEN_SEED)))
        except ValueError as err:
            st.error(f"Nothing was generated: {literal(err)}. The text below is the last one written.",
                     icon=":material/block:")
            return
        st.session_state[state.GEN_RESULT] = generated
        st.session_state[state.GEN_POSITION] = generated.prompt_length - 1  # the first character it chose
        if state.get(state.LESSON) == decoding_lesson.KEY:
            st.rerun()  # the lesson's question, drawn above, locks and reveals on the text just written


# Why a greedy (or beam) text repeats itself: not a bug of the page (Holtzman et al. 2020).
GREEDY_LOOPS = (" Always taking the likeliest character, the model soon meets a context it has met before and "
                "writes what followed it then, again and again: greedy and beam text falls into loops (a line "
                "repeated, blank lines), as Holtzman et al. 2020 found for much larger models. Sample at a "
                "temperature, or with top-k or top-p, to see what else it has learnt.")


def text(lab: Lab, generated: Generated) -> None:
    s, how = generated.sampling, how_written(generated.sampling)
    st.subheader("What it wrote")
    shipped = (f" ({lab.shipped_steps:,} steps before it was shipped + {generated.step:,} here)" if lab.origin
               else "")
    at = lab.shipped_steps + generated.step
    st.caption(f"Written {how}, seed {generated.seed}, by the model at step {at:,}{shipped}"
               + (f" (it has trained to step {lab.trainer.steps_done:,} since: generate again to see the change)"
                  if lab.trainer.steps_done != generated.step else "") + ". The prompt is in bold."
               + (GREEDY_LOOPS if s.method in ("greedy", "beam") else ""))
    prompt = generated.text[:generated.prompt_length]
    st.html(f'<pre style="white-space: pre-wrap; font-size: 15px; background: #F6F6F6; padding: 12px;">'
            f"<b>{html.escape(prompt)}</b>{html.escape(generated.continuation)}</pre>")
    if lab.origin == SHIPPED and generated.step == 0:  # the char-LSTM on Python's source, as shipped
        st.caption(SHIPPED_SHAPE)


def next_character(lab: Lab, generated: Generated) -> None:
    st.subheader("The next character, at any temperature")
    read = generated.read
    where, heat = st.columns(2)
    position = where.slider("After character", 0, len(read) - 1, key=state.GEN_POSITION,
                            help="the distribution over the character that follows this one")
    temperature = heat.slider("Temperature", 0.1, 3.0, 1.0, 0.05, key=state.GEN_VIEW_TEMPERATURE,
                              help="move it: the bars flatten above 1 and sharpen below")
    show(charts.next_character(generated.logits[position], lab.task.vocab, temperature, "".join(read[: position + 1])),
         "gen_next")
    chosen = generated.text[position + 1]
    st.caption(f"The model read up to character {position} and wrote “{visible(chosen)}” next"
               + (" (from the prompt: it did not choose it)" if position + 1 < generated.prompt_length else "")
               + (". Blue, softmax(z / T) at the temperature set; grey, the model's own distribution (T = 1)."
                  if temperature != 1 else ". Blue, the model's own distribution (T = 1): move the temperature to "
                  "see softmax(z / T) beside it.")
               + " At T → 0 all the mass goes to the likeliest character (greedy); at large T towards uniform.")


def units(generated: Generated) -> None:
    st.subheader("Units that follow the text")
    layer, unit_box = st.columns(2)
    names = list(generated.units)
    chosen_layer = layer.selectbox("Layer", names, index=len(names) - 1 if names[-1].endswith("c") else 0,
                                   key=state.GEN_LAYER, persist_state="session")
    hidden = generated.units[chosen_layer]  # [T - 1, H]
    table = correlated_units(hidden, generated.features(), top=12, per_feature=2)
    H = hidden.shape[1]
    if state.get(state.GEN_UNIT, H) >= H:
        st.session_state[state.GEN_UNIT] = int(table["unit"].iloc[0]) if len(table) else 0
    unit = unit_box.number_input("Unit", 0, H - 1, step=1, key=state.GEN_UNIT, persist_state="session")
    text_part, table_part = st.columns(2, gap="large")  # at 3:2 the table's r column was cut at 1024 px
    with text_part:
        st.markdown(f"The text coloured by unit **{unit}** of {chosen_layer} after each character: red positive, "
                    "blue negative, white 0; hover a character for its value.")
        st.html(coloured_tokens(generated.read, hidden[:, unit].numpy(), t=-1))
    with table_part:
        st.dataframe(table.style.format({"r": "{:+.2f}"}), hide_index=True, width="stretch")
        st.caption("Pearson's r between each unit and what a reader counts at each character (inside quotes, "
                   "bracket depth, indentation, position in the line...) over this text: the units most worth a "
                   "look (Karpathy et al. 2015 found such cells in char-LSTMs). One text is a lead, not a proof: "
                   "generate another.")


run()
