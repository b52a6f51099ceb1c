"""The BERT and GPT page's second read-out: one word in two sentences. Its vector at every layer of each
model, the cosine of its two vectors layer by layer beside word2vec's one vector a word (Devlin et al.
2019's contextual embeddings against context-free ones), and the held-out words nearest each of its
vectors in the masked model (nearest words in context)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts import bert_gpt as charts
from app.session.bert_gpt import CAUSAL, LESSON_SENTENCES, LESSON_WORD, MASKED, SAME_START, Readers
from app.session.word_vectors import shipped_vectors
from app.widgets import state
from app.widgets.corpus_needed import corpus_needed
from app.widgets.figures import show
from app.widgets.literal import literal
from engine import datasets
from engine.context_bank import (
    BANK_WINDOWS,
    PER_WORD,
    SIMILARITY_WORDS,
    ContextBank,
    context_bank,
    nearest,
    self_similarity,
)
from engine.contextual import ContextCosines, compare_contexts
from engine.tasks.masked_lm import found_in_prose

STATIC = "word2vec (one vector a word)"
NEIGHBOURS = 5


def section(readers: Readers, colours: dict[str, str]) -> None:
    st.markdown("#### One word, two sentences")
    for key, value in ((state.BERT_WORD, LESSON_WORD), (state.BERT_FIRST, LESSON_SENTENCES[0]),
                       (state.BERT_SECOND, LESSON_SENTENCES[1])):
        st.session_state.setdefault(key, value)
    # A sentence a row: three columns cut the lesson's first sentence at 1024 px wide (issue 44, finding 4)
    word = st.columns([1, 3])[0].text_input("Word", key=state.BERT_WORD, max_chars=40)
    first = st.text_input("First sentence", key=state.BERT_FIRST, max_chars=400)
    second = st.text_input("Second sentence", key=state.BERT_SECOND, max_chars=400)
    st.caption(f"Try a second sentence with the first's words up to the word, then others: e.g. *{SAME_START}*. "
               "Only a model that reads what follows can tell the two apart. The lesson's question is about that "
               "pair.")
    st.button("Use that second sentence", key="bert_same_start", icon=":material/edit_note:",
              on_click=lambda: st.session_state.update({state.BERT_SECOND: SAME_START}),
              disabled=second == SAME_START)
    try:
        with readers.lock:
            compared = {name: compare_contexts(readers.models[name], readers.task, word, first, second)
                        for name in (MASKED, CAUSAL)}
    except ValueError as err:
        st.error(f"These cannot be compared: {literal(err)}.", icon=":material/edit:")
        return
    static = static_cosine(compared[MASKED].word)
    cosines = cosine_frame(compared, static)
    show(charts.cosines(cosines, colours), "bert_cosines")
    st.caption(cosine_caption(compared, static, readers.about))
    st.table(cosine_table(cosines), hide_index=True)  # the figures themselves, not only on hover (issue 44)
    try:
        bank_of(readers, MASKED)  # the read-outs below compare with the models' vectors of the held-out prose
    except datasets.CorpusMissing as missing:
        corpus_needed(missing, "The nearest held-out words in context and each layer's self-similarity read its "
                               "held-out windows; the cosines above need only your two sentences.", "contexts")
        return
    st.caption(in_the_prose(compared[MASKED]))
    neighbours(readers, compared[MASKED])
    how_contextual(readers, colours)


def in_the_prose(compared: ContextCosines) -> str:
    """Where the prose the models read has the word and the two sentences: a word the training text seldom
    has gets a vector seldom trained; a sentence it holds, the models may have learned by heart."""
    training, held_out = found_in_prose((compared.word,))
    said = (f"In the prose: '{compared.word}' occurs {training:,} time{'s' * (training != 1)} in the training text "
            f"(the first 90%) and {held_out:,} in the held-out 10%.")
    where = {}
    for which, found in (("first", compared.first), ("second", compared.second)):
        in_training, in_held_out = found_in_prose(tuple(found.sentence))
        where[which] = ("is in the training text: the models may have learned it by heart" if in_training else
                        "is in the held-out text, which no model trained on" if in_held_out else "is in neither")
    if where["first"] == where["second"] == "is in neither":
        return said + " Neither sentence is in it: both are new to the models, as held-out sentences are."
    return said + f" The first sentence {where['first']}; the second {where['second']}."


def static_cosine(word: str) -> float | None:
    """word2vec's cosine for `word` across the two sentences: one vector, so 1; None without one."""
    vectors = shipped_vectors()
    if word not in set(vectors.words):
        return None
    return 1.0  # the same row of the same table in both sentences: a vector's cosine with itself


def cosine_frame(compared: dict[str, ContextCosines], static: float | None) -> pd.DataFrame:
    """model, layer, cosine: each model's cosine at each of its layers, word2vec's at every one."""
    rows = [] if static is None else [{"model": STATIC, "layer": label, "cosine": static}
                                      for label in compared[MASKED].labels]  # first: the models' lines draw over it
    rows += [{"model": name, "layer": label, "cosine": float(c)}
             for name, found in compared.items() for label, c in zip(found.labels, found.cosines)]
    return pd.DataFrame(rows)


def cosine_table(cosines: pd.DataFrame) -> pd.DataFrame:
    """A row a model, a column a layer (in the models' order): the cosines the figure draws, to three places."""
    layers = list(dict.fromkeys(cosines["layer"]))
    table = cosines.pivot(index="model", columns="layer", values="cosine")[layers]
    return table.map(lambda c: f"{c:.3f}").reset_index()


def cosine_caption(compared: dict[str, ContextCosines], static: float | None, about: str) -> str:
    masked, causal = compared[MASKED], compared[CAUSAL]
    first, second = masked.first, masked.second
    last = masked.labels[-1]
    words_after = first.sentence[first.position + 1:] != second.sentence[second.position + 1:]
    words_before = first.sentence[:first.position] != second.sentence[:second.position]
    said = (f"'{masked.word}' at word {first.position + 1} of the first sentence and word {second.position + 1} of "
            f"the second, read by {about}. At the embedding both models give it the same row (cosine 1). "
            f"{last.capitalize()}, the last, the masked model's two vectors have cosine "
            f"{float(masked.cosines[-1]):.3f}, the causal model's {float(causal.cosines[-1]):.3f}.")
    if words_after and not words_before:
        said += (" The sentences are the same up to the word, so the causal model, which reads only leftwards, "
                 "gives it the same vector in both: only the masked model reads what follows.")
    if static is None:
        return said + " The shipped word2vec has no vector for this word."
    return said + (" word2vec (dotted) has one vector for the word whatever the sentence: its cosine is 1 at "
                   "every layer.")


@st.cache_resource(show_spinner=False, max_entries=2)
def shipped_bank(_readers: Readers, name: str) -> ContextBank:
    """A shipped model's vectors of held-out prose, made once a process (read-only)."""
    return context_bank(_readers.models[name], _readers.task)


def bank_of(readers: Readers, name: str) -> ContextBank:
    """Model `name`'s vectors of BANK_WINDOWS held-out windows: a shipped model's shared, a student's
    run's kept in the session while the runs stand at the same step."""
    with readers.lock:
        if readers.key == ("shipped",):
            return shipped_bank(readers, name)
        kept = state.get(state.BERT_BANKS)
        if kept is None or kept[0] != readers.key:
            kept = (readers.key, {})
            st.session_state[state.BERT_BANKS] = kept
        if name not in kept[1]:
            kept[1][name] = context_bank(readers.models[name], readers.task)
        return kept[1][name]


def neighbours(readers: Readers, compared: ContextCosines) -> None:
    """The held-out words nearest the word's vector in each sentence, at a layer the student picks."""
    labels = list(compared.labels)
    st.session_state.setdefault(state.BERT_LAYER, labels[-1])
    if st.session_state[state.BERT_LAYER] not in labels:  # a plan with fewer blocks
        st.session_state[state.BERT_LAYER] = labels[-1]
    layer = st.radio("Nearest held-out words in context, in the masked model, at", labels, key=state.BERT_LAYER,
                     horizontal=True)
    at = labels.index(layer)
    bank = bank_of(readers, MASKED)
    columns = st.columns(2)
    for column, found in zip(columns, (compared.first, compared.second)):
        with readers.lock:
            rows = nearest(bank, readers.task, found.vectors[at], at, NEIGHBOURS)
        column.markdown(f"In *{literal(' '.join(found.sentence))}*:")
        frame = pd.DataFrame([{"in context": r.context, "cosine": r.cosine} for r in rows])
        column.table(frame.style.format({"cosine": "{:.3f}"}), hide_index=True)  # wraps a long context
    occurs = int((bank.ids == readers.task.index[compared.word]).sum())
    word = compared.word
    itself = (f"'{word}' occurs {occurs} times there: at the embedding those are its nearest (cosine 1, one row a "
              "word)" if occurs else f"'{word}' does not occur there, so none of them is the word itself")
    st.caption(f"The {NEIGHBOURS} words, among the {bank.ids.numel():,} words of {BANK_WINDOWS} held-out windows of "
               "the prose, whose vector at this layer is nearest (by cosine) the word's in each sentence, each in its "
               f"own sentence. {itself}. Higher up, a vector carries its sentence too, and other words in other "
               "sentences can lie nearer than the word's own occurrences.")


def how_contextual(readers: Readers, colours: dict[str, str]) -> None:
    """Each layer's self-similarity over held-out prose in both models (Ethayarajh 2019)."""
    st.markdown("#### How much does each layer depend on the sentence?")
    frame = pd.concat([self_similarity(bank_of(readers, name)).assign(model=name) for name in (MASKED, CAUSAL)])
    show(charts.self_similarity(frame, colours), "bert_self_similarity")
    st.table(similarity_table(frame), hide_index=True)
    st.caption(f"Self-similarity over the {BANK_WINDOWS} held-out windows: for each of the {SIMILARITY_WORDS} most "
               f"frequent words, the mean cosine of its vectors in different sentences (its first {PER_WORD} "
               "occurrences, every pair), averaged over the words; less the mean cosine of two different words' "
               "vectors (a layer whose vectors all point one way makes any two alike). This is Ethayarajh's (2019) "
               "measure: at the embedding a word has one vector, so it is 1 less that baseline; the lower a layer's, "
               "the more its vectors depend on their sentence. The table gives both cosines.")


def similarity_table(frame: pd.DataFrame) -> pd.DataFrame:
    """self_similarity's rows of both models, as the table under the figure shows them."""
    shown = frame[["model", "layer", "same", "random", "adjusted"]].rename(columns={
        "same": "one word, two sentences", "random": "two different words", "adjusted": "self-similarity"})
    cosines = ["one word, two sentences", "two different words", "self-similarity"]
    return shown.astype({"model": str, "layer": str}).assign(**{  # three places, as written (0.9270 read as four)
        column: shown[column].map(lambda c: f"{c:.3f}") for column in cosines})
