"""Attention: where an encoder-decoder's decoder looks at the source, trained live, one output
step at a time (Bahdanau et al. 2015; Luong et al. 2015; a pointer network's pointer)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import streamlit as st
import torch

import engine
from app.charts import attention as cattention
from app.charts import attention_linked as clinked
from app.charts import labels
from app.charts.beam_rows import beam_rows
from app.charts.beam_tree import beam_tree
from app.charts.views import view
from app.session import decoding
from app.session.lab import Lab
from app.session.link import echo, preset_setup
from app.widgets import corpus_needed, state
from app.widgets import decoded_counts as counts
from app.widgets import downloads as exports
from app.widgets.bottleneck import bottleneck
from app.widgets.controls import live, training_controls
from app.widgets.figures import show
from app.widgets.header import page_header, sidebar_summary
from app.widgets.literal import literal
from app.widgets.settings_form import NO_ATTENTION, SCORE_NAMES
from engine import datasets
from engine.beam import Beam, beam_search, forced_search
from engine.config import SCORES

# Encoder-decoders to open from here, each its task's measured preset (engine/tasks).
OPEN = {
    "copy": "Copy 20 symbols, dot attention",
    "dates": "Dates to YYYY-MM-DD, dot attention",
    "reverse": "Reverse 8 symbols, no attention (the bottleneck)",
    "sort": "Sort 5 numbers, a pointer network",
    "translate": "English to French (Tatoeba), dot attention",
}
SCORE_EQUATIONS = {
    "dot": r"e_{ti} = s_t^\top h_i",
    "general": r"e_{ti} = s_t^\top W_a h_i",
    "additive": r"e_{ti} = v_a^\top \tanh(W_a [s_{t-1}; h_i])",
    "scaled_dot": r"e_{ti} = s_t^\top h_i / \sqrt{n}",
    "cosine": r"e_{ti} = \beta \cos(s_t, h_i)",
    "location": r"\alpha_t = \mathrm{softmax}(W_a s_t)",
}
# Source tokens up to which the teacher-forced and free-running maps sit side by side: in a half column at 1024 px
# (about 330 px) the words of a held-out sentence of 10-12 tokens lay over each other (the length lesson's walk)
SIDE_BY_SIDE = 8
BEAM_STEP = 1  # the beam's rows first shown: at step 0 every hypothesis has read only <sos>, so all share one row
ATTEND = r"\alpha_{ti} = \frac{\exp(e_{ti})}{\sum_j \exp(e_{tj})}, \qquad c_t = \sum_i \alpha_{ti} h_i"


def run() -> None:
    lab = page_header("Encoder-decoder with attention", summary=False)
    if lab.task.spec.mapping not in ("encdec", "pointer"):
        offer_models(lab, "The model on Build & Train reads a sequence and answers without a decoder, so it has no "
                          "attention over a source to show. Open an encoder-decoder:")
        return
    if lab.setup.model.arch != "transformer" and lab.task.spec.mapping == "encdec":
        score_picker(lab)
    data_credit(lab)
    training_controls(lab)  # with its task's corpus not on this machine, what to download instead
    if lab.setup.model.arch != "transformer" and lab.setup.model.attention is None:
        st.info("No attention: the decoder starts from the encoder's final state and never looks back at the "
                "source, so every source token must squeeze through that one vector (the bottleneck). Pick a "
                "score function above to give the decoder an alignment over the source.", icon=":material/info:")
        live(lab, draw_without_attention)  # only the live fragment's ticks train: without it Play trained nothing
        bottleneck()
        return
    if lab.corpus_missing is None:
        sample_and_step(lab)
        live(lab, draw)
        downloads(lab)
    else:  # opened before its corpus is here: no samples to train on or open up, but what you type
        sidebar_summary(lab)  # the live fragment draws it where the model trains
        if decoding.reads_text(lab.task):
            typed_only(lab)
    bottleneck()


def data_credit(lab: Lab) -> None:
    """The source, licence and attribution of the public corpus the lab's task reads (Tatoeba's pairs: CC BY 2.0
    FR, tatoeba.org, as their licence asks), where it reads one; while it is not on this machine, the box that
    says what to download names them (training_controls)."""
    task = lab.task
    if task.public_corpus is None or lab.corpus_missing is not None:
        return
    corpus = datasets.CORPORA[task.public_corpus]
    st.caption(f"Data: {corpus.title}. Licence: {corpus.licence}. Attribution: {corpus.attribution}.")


def offer_models(lab: Lab, why: str) -> None:
    st.info(why, icon=":material/info:")
    row = st.container(horizontal=True)  # each button as wide as its label, wrapping: five columns cut them at 1024
    for task, label in OPEN.items():
        if row.button(label, key=f"attention.open.{task}", width="content"):
            open_model(lab, task)


def open_model(lab: Lab, task: str) -> None:
    try:
        lab.start(preset_setup(task))
    except datasets.CorpusMissing as missing:  # said at the top of the page, until it is here
        corpus_needed.ask(missing, f"The {task} model you asked to open trains on it; your model is unchanged.")
        st.rerun()
    except ValueError as err:  # over the size budget: say so, keep the model
        st.error(f"{literal(err)}. The model you had is unchanged.", icon=":material/block:")
        return
    st.session_state.pop(state.LESSON, None)
    st.session_state[state.TARGET_STEPS] = engine.TASKS[task].preset.steps
    st.rerun()


def score_picker(lab: Lab) -> None:
    """The course's table of score functions, one click apart: a new score is a new model."""
    current = lab.setup.model.attention or NO_ATTENTION
    # No key: the widget shows the model's score, also after Build & Train changed it (a keyed
    # widget would keep the old choice and change the model back).
    options = (NO_ATTENTION,) + SCORES
    chosen = st.columns(2)[0].selectbox(
        "Score function", options, index=options.index(current), format_func=SCORE_NAMES.get,
        help="a new score function builds a fresh model (new weights), the other settings kept")
    if current != NO_ATTENTION:  # under the picker: beside it, at 1024 px c_t was cut at the right
        st.latex(SCORE_EQUATIONS[current] + r", \quad " + ATTEND)
    if chosen != current:
        wanted = dataclasses.replace(lab.setup, model=dataclasses.replace(
            lab.setup.model, attention=None if chosen == NO_ATTENTION else chosen))
        try:
            lab.change(wanted, lab.upload)
        except ValueError as err:
            st.error(f"{literal(err)}. The model you had is unchanged.", icon=":material/block:")
            return
        st.rerun()


def sample_and_step(lab: Lab) -> None:
    """The probe sample, the output step to decode, the beam's width and a token to force at that
    step, and (a task that encodes text) a source to type instead of the sample: set while it plays."""
    sample, step, width, force = st.columns(4)
    sample.number_input("Sample to open up", min_value=0, max_value=len(lab.probes.samples[0]) - 1, step=1,
                        key=state.PROBE_INDEX, persist_state="session",
                        help="one of a few fixed samples the model never trains on")
    decoding_controls(lab, step, width, force)
    if decoding.reads_text(lab.task):
        x, _ = lab.probes.samples
        source_box(lab, "Or type a source for it to rewrite (empty: the sample)",
                   decoding.as_typed(lab.task, x[state.probe_index()]),
                   "the maps, the decoding step, the beam and a forced token then decode what you typed; it has no "
                   "target, so there is no teacher-forced map")


def typed_only(lab: Lab) -> None:
    """A model opened before its task's corpus is on this machine has no samples to open up on (they are the
    corpus's): it decodes what the student types, with the same controls and figures as a typed source."""
    step, width, force = st.columns(3)
    decoding_controls(lab, step, width, force)
    st.session_state.setdefault(state.SOURCE_TEXT, lab.task.typed_example or "")
    source_box(lab, "Type a source for it to rewrite", lab.task.typed_example or "",
               "the maps, the decoding step, the beam and a forced token decode what you typed; it has no target, "
               "so there is no teacher-forced map")
    source = typed(lab, lambda *args, **kwargs: None)  # source_box said what was wrong with it
    if source is None:
        st.info("Type a source above: the model decodes it, and the figures below open its decoder up.",
                icon=":material/keyboard:")
        return
    steps = lab.trainer.steps_done  # the weights the decodings are of: a new score function is a new model
    figures(lab, source, None, lambda what, make: view(lab.model, "decoded", (what,), make, version=steps))


def decoding_controls(lab: Lab, step, width, force) -> None:
    """In the columns given: the output step to decode, the beam's width and a token to force at that step."""
    out_len = lab.task.spec.out_len
    if state.get(state.ATTENTION_T, 0) > out_len - 1:
        st.session_state[state.ATTENTION_T] = out_len - 1
    step.slider("Output step t to decode", 0, out_len - 1, key=state.ATTENTION_T, persist_state="session")
    width.slider("Beam width", 1, 5, value=3, key=state.BEAM_WIDTH, persist_state="session",
                 help="1 is greedy decoding")
    words = decoding.target_words(lab.task)[1:]  # nothing is ever written as <sos>
    if state.get(state.FORCED_TOKEN) not in (None, *words):  # a word of another task's vocabulary
        st.session_state.pop(state.FORCED_TOKEN)
    force.selectbox("Force a token at step t", words, index=None, key=state.FORCED_TOKEN, placeholder="(none)",
                    format_func=labels.visible, help="the decoder is made to write this at step t after its own "
                    "greedy choices before it; the beam then goes on from there")


def source_box(lab: Lab, label: str, example: str, help: str) -> None:
    """The box for a source to type, and under it what is wrong with what was typed, or which of its words
    the model reads as <unk>."""
    st.columns(2)[0].text_input(label, key=state.SOURCE_TEXT, persist_state="session", placeholder=f"e.g. {example}",
                                help=help)
    source = typed(lab, st.warning)  # says here, under the box, what to change
    unknown = decoding.unknown_words(lab.task, source.typed) if source is not None else []
    if unknown:
        st.info(f"Not in the model's vocabulary, so read as {literal('<unk>')}: {literal(', '.join(unknown))}. "
                f"It knows only the words its training pairs use {lab.task.min_count} times or more; try another "
                "word.",
                icon=":material/translate:")


@dataclass(frozen=True)
class Source:
    """What the figures decode: probe sample `i` of the batch x (targets y), or a typed source
    (x one row, y None: there is no target)."""

    x: torch.Tensor  # [N, S] (or [N, S, D] values)
    y: torch.Tensor | None  # [N, T_out]
    i: int
    typed: str | None = None  # the text as typed; None: a probe sample

    @property
    def key(self) -> str:
        """How the page's cache of decodings tells sources apart (see decoded)."""
        return "" if self.typed is None else f" typed {self.typed!r}"


def typed(lab: Lab, warn) -> Source | None:
    """The source the student typed, or None: nothing typed, or text the model cannot read, which
    warn(...) explains (st.warning in the controls, a no-op in the figures' fragment)."""
    text = (state.get(state.SOURCE_TEXT) or "") if decoding.reads_text(lab.task) else ""
    if not text:
        return None
    try:
        ids = decoding.typed_source(lab.task, text)  # [S]
    except ValueError as err:
        said = literal(err)  # the error may repeat what was typed: cut, and shown as its characters
        warn(f"{said[:1].upper()}{said[1:]}. Showing sample {state.probe_index()} instead.",
             icon=":material/keyboard:")
        return None
    return Source(ids[None], None, 0, text.strip())


def draw(lab: Lab) -> None:
    index = state.probe_index()
    rec = lab.recording(index)
    x, y = lab.probes.samples
    source = typed(lab, lambda *args, **kwargs: None) or Source(x, y, index)  # the controls said what was wrong
    figures(lab, source, rec, lambda what, make: decoded(lab, index, what, make))


def figures(lab: Lab, source: Source, rec: engine.Recording | None, decoded) -> None:
    """Everything drawn of `source`: a probe sample (`rec`, its teacher-forced recording) or a typed source (a
    probe sample's `rec` still, which names the sites; None for a model with no samples: typed_only). Each
    decoding is made by decoded(what, make), which keeps it while the weights stand."""
    words = decoding.target_words(lab.task)
    free = decoded("free" + source.key, lambda: decoding.free_run(lab.model, source.x, source.y, source.i))
    site = decoding.alignment_site(rec if rec is not None else free.rec)
    keys = decoding.source_words(lab.task, source.x[source.i], site)  # every key, padding included
    free_trace, shown_keys, padding = decoding.without_padding(
        decoding.first_rows(free.rec.attention_traces[site], len(free.tokens)), keys)
    recorded_caption(lab, source, padding, words)
    if rec is not None and hasattr(lab.task, "references"):  # a translation's, with samples: its corpus is here
        counts.held_out_bleu(lab)
        counts.bleu_by_length(lab)
    if source.typed is None:
        n = decoding.target_length(source.y[source.i])  # a translation's target ends before T_out
        forced = decoding.without_padding(decoding.first_rows(rec.attention_traces[site], n), keys)[0]
        outputs = source.y[source.i, :n].tolist()
        alignment_maps(forced, free, free_trace, shown_keys, words, outputs)
        if lab.setup.task == "dates":
            counts.year_digits(lab)
        step_figure(rec, forced, shown_keys, words, "teacher-forced")
    else:  # no target: the free run is what the decoding step and the linked view read
        forced, outputs = free_trace, free.tokens
        typed_maps(free, free_trace, shown_keys, words, samples=rec is not None)
        step_figure(free.rec, free_trace, shown_keys, words,
                    f"free running on your source (it wrote {len(free.tokens)} tokens)")
    width = state.get(state.BEAM_WIDTH, 3)
    beam = decoded(f"beam {width}{source.key}", lambda: beam_search(lab.model, source.x[source.i], width=width))
    show(beam_tree(beam, words, keys), "beam_tree")
    st.caption(f"Beam search keeps the {width} most likely prefixes at every step (log p summed over the tokens). "
               f"Best: {' '.join(words[t] for t in beam.best.tokens)} (log p = {beam.best.score:.3f}); greedy "
               f"decoding wrote {' '.join(words[t] for t in free.tokens)}. Point at a node: the source token its "
               "decoder looked at most to write it.")
    beam_attention(lab, beam, shown_keys, words, decoding.looked_at(free.rec.attention_traces[site]))
    forced_continuation(lab, source.x[source.i], free.tokens, words)
    with st.expander("Point at a cell: the alignment with its source token and output step lit up",
                     key=state.LINKED_OPEN, on_change="rerun") as linked:
        if linked.open:  # built only while a student looks at it, not on every tick
            st.altair_chart(clinked.alignment_linked(forced, shown_keys, [words[t] for t in outputs]))


def draw_without_attention(lab: Lab) -> None:
    """No alignment to draw: how far training has come and how many held-out tokens the model gets
    right, the figure the bottleneck lessons quote (the open lesson's band comes with the fragment); a
    translator's BLEU, and by sentence length, as with attention."""
    held = lab.held_out.log.last
    if held is not None:
        st.caption(f"Held-out {lab.task.metric_name} {held['metric']:.1%} at step {held['step']:,}, on "
                   f"{lab.held_out.describe()}, with the whole source squeezed through the encoder's final state.")
    if held is not None and hasattr(lab.task, "references"):  # a translator: its BLEU, and by length (the lesson)
        counts.held_out_bleu(lab)
        counts.bleu_by_length(lab)


def recorded_caption(lab: Lab, source: Source, padding: int, words: tuple[str, ...]) -> None:
    held = lab.held_out.log.last if lab.measured_yet else None  # none for a model waiting for its corpus
    score = ("" if held is None else
             f"; held-out {lab.task.metric_name} {held['metric']:.3f} ({lab.step_said(held['step'])})")
    left_out = (f" The source's {padding} padding token{'s get' if padding > 1 else ' gets'} weight 0 and "
                f"{'are' if padding > 1 else 'is'} left out of the maps." if padding else "")
    if source.typed is not None:
        at = lab.probes.recorded_at if lab.measured_yet else lab.trainer.steps_done
        st.caption(f"Decoded at {lab.step_said(at)} from the source you typed, '{literal(source.typed)}'{score}. "
                   f"It has no target to compare with.{left_out}")
        return
    values = decoding.input_values(lab.task, source.x[source.i])
    inputs = f" Input: {values}." if values else ""
    target = source.y[source.i, : decoding.target_length(source.y[source.i])].tolist()
    st.caption(f"Recorded at {lab.step_said(lab.probes.recorded_at)} on sample {source.i}{score}.{inputs} "
               f"Target: {' '.join(words[t] for t in target)}.{left_out}")


def map_columns(keys: list[str]):
    """Side by side for a short source; a longer one (copy's 20) one above the other, where each
    map gets the page's width (in a half column at 1024 px a 20-token map was 75 px wide). With
    whether they are narrow (figures.show wraps a title to their width)."""
    return (*st.columns(2), True) if len(keys) <= SIDE_BY_SIDE else (st.container(), st.container(), False)


def alignment_maps(forced, free: decoding.FreeRun, free_trace, keys: list[str], words: tuple[str, ...],
                   target: list[int]) -> None:
    """A probe sample's alignment, teacher-forced on its target and free running."""
    left, right, narrow = map_columns(keys)
    forced_map = cattention.alignment(forced, keys, [words[t] for t in target])
    show(forced_map.update_layout(title_text="Teacher forcing: alignment α<sub>ti</sub>"), "forced", left,
         narrow=narrow)
    left.caption("Teacher forcing, as in training: the decoder reads the true previous token y_{t−1}. Row t is "
                 "α_t, how much output step t takes from each source token; each row sums to 1.")
    free_map = cattention.alignment(free_trace, keys, [words[t] for t in free.tokens])
    show(free_map.update_layout(title_text="Free running: alignment α<sub>ti</sub>"), "free", right, narrow=narrow)
    verdict = "the whole sequence right" if free.right else "not the target"
    right.caption(f"Free running, as at test time: the decoder reads its own previous guess and wrote "
                  f"{len(free.tokens)} tokens ({verdict}). Where the two maps part, a wrong guess sent the decoder "
                  "elsewhere.")


def typed_maps(free: decoding.FreeRun, free_trace, keys: list[str], words: tuple[str, ...], samples: bool) -> None:
    """A typed source's free-running alignment, and why it has no teacher-forced one (and, with `samples`, that
    a probe sample has one)."""
    # The one map a typed source has takes the page's width: in a half column beside the note, a typed sentence's
    # map was 80 px wide at 1024, its source's labels over each other (issue 44, finding 4)
    free_map = cattention.alignment(free_trace, keys, [words[t] for t in free.tokens])
    show(free_map.update_layout(title_text="Free running: alignment α<sub>ti</sub>"), "free")
    st.caption(f"Free running on your source: the decoder reads its own previous guess and wrote "
               f"{' '.join(words[t] for t in free.tokens)}. Row t is α_t, how much output step t takes from each "
               "source token; each row sums to 1.")
    st.info("No teacher-forced map: teacher forcing feeds the decoder the true previous token, and typed text has "
               "no target. Fed its own output instead, teacher forcing is exactly the free run, the map drawn here. "
               + ("Clear the box to see a probe sample with both." if samples else
                  "The samples that have both come from the corpus its task reads, named above."),
               icon=":material/info:")


def step_figure(rec: engine.Recording, trace, keys: list[str], words: tuple[str, ...], how: str) -> None:
    """Output step t (up to the last the trace has) of the teacher-forced recording, or of the
    free run on a typed source: `how` says which."""
    steps = trace.weights.shape[1]  # a translation's target, or a free run, may end before T_out
    t = min(state.get(state.ATTENTION_T, 0), steps - 1)
    show(cattention.decoding_step(trace, rec.y_hat[:steps], t, keys, words), "decoding_step")
    st.caption(f"Output step t = {t}, {how}: the weights α_t over the source, the context c_t they mix from the "
               "encoder's states, and the distribution over the next token (the chosen one in vermillion).")


def beam_attention(lab: Lab, beam: Beam, keys: list[str], words: tuple[str, ...], columns: torch.Tensor) -> None:
    """Each hypothesis's attention row at one output step of the beam, with its own slider: the
    beam is two screens below the top controls at 1024x768, its hypotheses read other prefixes than
    the target the decoding step reads, and moving a slider here redraws only the figures. Its range
    is the task's output length, not the beam's (which changes as the model trains, and a slider
    whose range changes starts again from its default). columns [S_k]: the keys the maps show."""
    out_len = lab.task.spec.out_len
    step = state.get(state.BEAM_STEP, BEAM_STEP)
    if state.BEAM_STEP not in st.session_state or step > out_len - 1:  # first drawn, or a longer task's step
        st.session_state[state.BEAM_STEP] = min(step, out_len - 1)
    chosen = st.columns(2)[0].slider("Beam's attention rows at output step t", 0, out_len - 1,
                                     key=state.BEAM_STEP, persist_state="session",
                                     help="one row per hypothesis the beam kept at that step")
    t = min(chosen, len(beam.steps) - 1)
    show(beam_rows(beam, t, keys, words, columns), "beam_rows")
    stopped = (f" The beam stopped after {len(beam.steps)} steps, so this is its last, t = {t}."
               if t < chosen else "")
    st.caption("Row by row, where each hypothesis's decoder looked to write its token at step t, having read its own "
               "tokens before t (the label: the last of them → the token written). Hypotheses that extend one prefix "
               f"have read the same tokens and share a row; rows part where the hypotheses' pasts differ.{stopped}")


def decoded(lab: Lab, index: int, what: str, make):
    """make() once per recording of sample `index`: a free run or a beam search (of the sample, or
    of a typed source: `what` names it) is kept until the weights change (a training step, a
    restored best step: the lab records the sample anew), so moving a slider, a whole-page run,
    does not decode again."""
    return view(lab.recording(index), "decoded", (what,), make)


def forced_continuation(lab: Lab, source, greedy: tuple[int, ...], words: tuple[str, ...]) -> None:
    """Seq2Seq-Vis's question: what does the decoder write next if it is made to write another
    token at step t? Its greedy choices up to t, the forced token, then the beam from there."""
    token = state.get(state.FORCED_TOKEN)
    if token is None:
        return
    t = state.get(state.ATTENTION_T, 0)
    if t > len(greedy) - 1:  # it wrote <eos> before step t: nothing follows it
        st.warning(f"The greedy decoding wrote {len(greedy)} tokens, ending with <eos>: force a token at a step "
                   f"t ≤ {len(greedy) - 1}.", icon=":material/block:")
        return
    prefix = greedy[:t] + (words.index(token),)
    beam = forced_search(lab.model, source, prefix, width=state.get(state.BEAM_WIDTH, 3))
    written = " ".join(words[w] for w in beam.best.tokens)
    show(beam_tree(beam, words).update_layout(title_text=f"Forced: '{labels.visible(token)}' at step {t}, "
                                              f"then the beam: '{labels.visible(written)}'"), "forced_tree")
    st.caption(f"Greedy decoding wrote {' '.join(words[w] for w in greedy)}. Made to write {token} at step {t} "
               f"(after its own first {t} tokens), the decoder goes on: {written} (log p = {beam.best.score:.3f}, the "
               "forced token's own probability included).")


def downloads(lab: Lab) -> None:
    """Made when clicked, from the model as it is then (see exports.py). The alignment is the map
    the page shows: the probe sample's, teacher-forced, or, while a typed source is shown, that
    source's, free running (its column "decoded" and the file's name say which); padding is left
    out as on the maps, so i is the map's column."""
    recorded = exports.chosen_recording(lab)
    index, source = state.probe_index(), typed(lab, lambda *args, **kwargs: None)  # read now, not on the click
    words = decoding.target_words(lab.task)

    def teacher_forced():
        rec, _ = recorded()
        site = decoding.alignment_site(rec)
        x, y = lab.probes.samples
        n = decoding.target_length(y[index])
        trace, keys, _ = decoding.without_padding(decoding.first_rows(rec.attention_traces[site], n),
                                                  decoding.source_words(lab.task, x[index], site))
        frame = clinked.alignment_frame(trace, keys, [words[t] for t in y[index, :n].tolist()], 0)
        return frame.assign(decoded=f"sample {index}, teacher-forced")

    def free_running():
        rec, _ = recorded()  # the one the page drew: its decoding was kept with it
        free = view(rec, "decoded", ("free" + source.key,),
                    lambda: exports.held(lab, decoding.free_run, lab.model, source.x, None, 0))
        site = decoding.alignment_site(free.rec)
        shown = decoding.first_rows(free.rec.attention_traces[site], len(free.tokens))
        trace, keys, _ = decoding.without_padding(shown, decoding.source_words(lab.task, source.x[0], site))
        frame = clinked.alignment_frame(trace, keys, [words[t] for t in free.tokens], 0)
        return frame.assign(decoded=f"typed {echo(source.typed)}, free-running")  # a CSV cell: plain text, cut

    def weights_csv() -> str:
        return (teacher_forced() if source is None else free_running()).to_csv(index=False)

    with st.expander(exports.EXPANDER):
        how, name = ("teacher-forced", "alignment") if source is None else (
            "free-running on your source", "alignment-typed-free-running")
        exports.button_row().download_button(f"Alignment α_ti, {how} (.csv)", weights_csv,
                                             f"{exports.stem(lab)}-{name}.csv", mime="text/csv")
        st.caption(exports.PNG_NOTE)


run()
