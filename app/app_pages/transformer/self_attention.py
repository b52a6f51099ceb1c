"""Self-attention: every layer and head of a transformer, one head at full size and as lines from
each query to the keys it looks at, and why the scores are divided by sqrt(d_k), on a probe sample
(or text the student types), trained live."""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pandas as pd
import streamlit as st
import torch

import engine
from app.app_pages.transformer.models import copied, is_transformer, shadowed
from app.charts import attention as cattention
from app.charts import attention_lines as clines
from app.charts import scaling as cscaling
from app.charts.views import view
from app.session.lab import Lab
from app.session.transformers import CHAR_LM, REVERSAL, SENTIMENT_ENCODER
from app.widgets import downloads as exports
from app.widgets import parts, state
from app.widgets.controls import live, training_controls
from app.widgets.figures import show
from app.widgets.header import page_header, sidebar_summary
from app.widgets.literal import literal
from app.widgets.open_model import open_button

FORMULA = r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"
MEAN = "mean of heads"
MAX_SHOWN = 512  # positions drawn: a 512 x 512 map is 1.8 MB of float32 and builds in 0.1 s (benchmarks/README)
GRID_HEADS_UP_TO = 128  # past this many positions the grid draws each layer's mean of heads: 2 layers x 4
# heads of 512 x 512 are 14 MB a redraw, their mean 3.6 (benchmarks/attention_maps.py)
KINDS = {"self": "its own tokens (self)", "cross": "the source (cross)"}
# (label, setup, "Train up to step", what it is and what was measured: played for 60 s in chromium at 1400 px on
# this 2-core machine, 2026-11-23 01:46-01:50, load average 8-12 from other work; held-out figures from the page)
OFFERS = (
    ("Causal char LM", CHAR_LM, 1000,
     "2 blocks x 4 heads, d = 48, on 48 characters: each character looks only at itself and the ones before "
     "(the causal mask). Measured here, playing for 60 s: 310 steps, held-out next-character accuracy 0.3% to "
     "49% (loss 5.26 to 1.93)."),
    ("Encoder: sentiment", SENTIMENT_ENCODER, 800,
     "2 blocks x 2 heads, d = 32, on 40 words of a review: every word looks at every other (no mask). Measured "
     "here, playing for 60 s: 408 steps, held-out accuracy 46% to 77%."),
    ("Encoder-decoder: reverse", REVERSAL, 400,
     "2 + 2 blocks x 2 heads, d = 32: the encoder's self-attention, the decoder's causal self-attention and its "
     "cross-attention over the source. Measured here, playing: held-out accuracy 11% to 99.8% by step 100 "
     "(within 40 s)."),
)


@dataclass
class Probe:
    """What the figures open: a recording and its tokens (a list, or per stack for an
    encoder-decoder)."""

    rec: engine.Recording
    tokens: list[str] | dict[str, list[str]]
    typed: bool = False  # the student's text, not a probe sample


def run() -> None:
    lab = page_header("Self-attention", summary=False)
    if not is_transformer(lab):
        sidebar_summary(lab)
        offer(lab)
        return
    st.latex(FORMULA)
    st.caption("Each head compares every query (the token that asks) with every key (the token looked at): "
               "a softmax over the scores, one row per query, says how much of each value the query takes.")
    part = parts.pick(lab, layer="Layer (focused map)", direction=None)
    kind = pick_kind(lab, part.stack)
    typed_text_box(lab)
    probe = probe_of(lab)
    if probe is None:
        return
    pick_head_and_query(lab, probe, part.stack, kind, part.layer)
    pick_lines_query(probe, part.stack, kind, part.layer)
    training_controls(lab)
    live(lab, draw)
    downloads(lab)


def offer(lab: Lab) -> None:
    st.info(f"Your model is a{'n' if lab.setup.model.arch in ('rnn', 'lstm') else ''} "
            f"{lab.setup.model.arch.upper()}: it carries a state from step to step and has no self-attention "
            "to show. Open a transformer (it replaces your model; Build & Train sets it back):",
            icon=":material/info:")
    for label, setup, steps, said in OFFERS:  # one a row: three side by side cut their labels at 1024 px
        button, words = st.columns([2, 3], vertical_alignment="center")
        open_button(lab, label, setup, steps, key=f"self_attention.open.{setup.task}", where=button)
        words.caption(said)
    st.caption("Measured on 2026-11-23 in chromium on this 2-core server while other work kept its load average at "
               "8-12; a quieter machine trains faster.")


# ------------------------------------------------------------------ pickers (outside the live fragment)

def encdec(lab: Lab) -> bool:
    return lab.task.spec.mapping == "encdec"


def pick_kind(lab: Lab, stack: str | None) -> str:
    """An encoder-decoder's decoder has two attentions: its own tokens, or the source."""
    if not (encdec(lab) and stack == "decoder"):
        return "self"
    return st.radio("The decoder attends to", list(KINDS), format_func=KINDS.get, key=state.SA_KIND, horizontal=True,
                    persist_state="session")


def chosen_kind(lab: Lab, stack: str | None) -> str:
    return state.get(state.SA_KIND, "self") if encdec(lab) and stack == "decoder" else "self"


def typed_text_box(lab: Lab) -> None:
    """A character model reads text a student types, instead of a probe sample."""
    if reads_text(lab):
        st.text_input("Or type text for it to read (empty: the sample)", key=state.SA_TEXT, max_chars=MAX_SHOWN + 1,
                      persist_state="session", placeholder="for name in names: print(name)",
                      help=f"up to {MAX_SHOWN + 1} characters of its corpus's alphabet; it reads all but the last "
                      "and predicts each next one")


def pick_head_and_query(lab: Lab, probe: Probe, stack: str | None, kind: str, layer: int) -> None:
    trace = focused_trace(probe.rec, stack, kind, layer)
    heads, T_q = trace.weights.shape[:2]
    options = [*range(heads), MEAN]
    if state.get(state.SA_HEAD, 0) not in options:  # a choice made on a model with more heads
        st.session_state[state.SA_HEAD] = 0
    shadowed(state.SA_QUERY, state.SA_QUERY_SLIDER, min(state.get(state.SA_QUERY, T_q // 2), T_q - 1))
    head, query, average = st.columns([2, 3, 3], vertical_alignment="bottom")  # [2, 3, 2] cut the toggle at 1024
    head.selectbox("Head (focused map)", options, key=state.SA_HEAD, persist_state="session",
                   format_func=lambda h: h if h == MEAN else f"head {h}")
    query.slider("Query for the √d_k figures", 0, max(T_q - 1, 1), key=state.SA_QUERY_SLIDER, on_change=copied,
                 args=(state.SA_QUERY, state.SA_QUERY_SLIDER), disabled=T_q == 1)
    average.toggle("Grid: mean of heads", key=state.SA_AVERAGE, persist_state="session",
                   help="one map per layer, the mean of its heads, instead of every head")


def pick_lines_query(probe: Probe, stack: str | None, kind: str, layer: int) -> None:
    """The query the lines view highlights (None: every one), by its position and token."""
    trace = focused_trace(probe.rec, stack, kind, layer)
    tokens = cattention.shown(cattention.tokens_for(trace.site, probe.tokens)[0])
    options = [None, *range(len(tokens))]
    if state.get(state.SA_LINES_QUERY) not in options:  # a choice made on a longer sequence
        st.session_state[state.SA_LINES_QUERY] = None
    every = "every token" if len(tokens) <= clines.LINES_UP_TO else f"the first {clines.LINES_UP_TO} tokens"
    column, _ = st.columns([2, 3])
    column.selectbox("Query for the lines view", options, key=state.SA_LINES_QUERY,
                     format_func=lambda t: every if t is None else f"{t}: {tokens[t]}", persist_state="session",
                     placeholder=every)  # None is sent as "nothing picked", which shows the placeholder


# ------------------------------------------------------------------ what is opened

def probe_of(lab: Lab, say: bool = True) -> Probe | None:
    """The probe sample, or the typed text; None when it cannot be drawn. say: tell the student
    what was wrong (the text, a sample too long to draw), in the page."""
    index = state.probe_index()
    typed = (state.get(state.SA_TEXT) or "") if reads_text(lab) else ""
    warn = st.warning if say else (lambda *args, **kwargs: None)
    probe = None
    if typed:
        probe = typed_probe(lab, typed, index, warn)
    if probe is None:
        rec = lab.recording(index)
        probe = Probe(rec, sample_tokens(lab, rec, index))
    return shown_part(lab, probe, warn)


def reads_text(lab: Lab) -> bool:
    """A character model: it can read text a student types."""
    return hasattr(lab.task, "encode") and lab.task.spec.mapping == "seq2seq" and lab.task.spec.input_kind == "tokens"


def typed_probe(lab: Lab, text: str, index: int, warn) -> Probe | None:
    if len(text) > MAX_SHOWN + 1:
        warn(f"That text has {len(text)} characters; the maps draw at most {MAX_SHOWN} positions, so it reads "
                   f"the first {MAX_SHOWN + 1}.", icon=":material/content_cut:")
        text = text[: MAX_SHOWN + 1]
    if len(text) < 2:
        warn(f"Type at least two characters: it reads all but the last and predicts each next one. Showing "
                   f"sample {index}.", icon=":material/keyboard:")
        return None
    try:
        ids = lab.task.encode(text)  # [T + 1]
    except ValueError as err:
        said = literal(err)  # the error repeats the characters typed: cut, and shown as themselves
        warn(f"{said[:1].upper()}{said[1:]}. Showing sample {index} instead.", icon=":material/keyboard:")
        return None
    with lab.hold():  # once per recording of the sample, which a tick keeps (Lab.recording): the same weights
        rec = view(lab.recording(index), "typed", (text,), lambda: engine.record(
            lab.model, ids[None, :-1], ids[None, 1:], jacobians=False))
    return Probe(rec, list(text[:-1]), typed=True)


def sample_tokens(lab: Lab, rec: engine.Recording, index: int) -> list[str] | dict[str, list[str]]:
    """The tokens each attention reads: the task's symbols, an encoder-decoder's decoder inputs
    (<sos> and the target, teacher-forced), or t=0, t=1, ... for values, which have none."""
    site = next(iter(rec.attention_traces))
    symbols = lab.symbols(index, "encoder" if encdec(lab) else None)
    if not encdec(lab):
        T = rec.attention_traces[site].weights.shape[1]
        return symbols if symbols is not None and len(symbols) == T else positions(T)
    vocab = getattr(lab.task, "target_vocab", None)
    S = next(t.weights.shape[2] for s, t in rec.attention_traces.items() if s.stack == "encoder")
    T = next(t.weights.shape[1] for s, t in rec.attention_traces.items() if s.stack == "decoder")
    decoder = ["<sos>"] + [vocab[i] for i in rec.y.tolist()[:-1]] if vocab is not None else positions(T)
    return {"encoder": symbols if symbols is not None and len(symbols) == S else positions(S),
            "decoder": decoder if len(decoder) == T else positions(T)}


def positions(T: int) -> list[str]:
    return [f"t={t}" for t in range(T)]


def causal_only(lab: Lab) -> bool:
    """Every attention masks the future: the first n queries see only the first n keys."""
    return not encdec(lab) and not lab.setup.model.bidirectional


def shown_part(lab: Lab, probe: Probe, warn) -> Probe | None:
    """At most MAX_SHOWN positions: a causal model's first ones (exact: they never see later
    keys); anything else longer says so and draws nothing."""
    longest = max(max(t.weights.shape[1:]) for t in probe.rec.attention_traces.values())
    if longest <= MAX_SHOWN:
        return probe
    if not causal_only(lab):
        warn(f"This sample has {longest} positions; the maps stay responsive up to {MAX_SHOWN}, and an encoder's "
             "rows cannot be cut short (every token looks at every other). Set a shorter sequence length on Build "
             "& Train.", icon=":material/straighten:")
        return None
    n = MAX_SHOWN
    def cut() -> engine.Recording:  # once per recording, so that the figures kept with the cut one hold
        traces = {site: engine.AttentionTrace(site, t.weights[:, :n, :n], t.logits[:, :n, :n], t.context[:, :n])
                  for site, t in probe.rec.attention_traces.items()}
        return dataclasses.replace(probe.rec, attention_traces=traces)

    if warn is st.warning:
        st.caption(f"The first {n} of {longest} positions: exact, since a causal model's first {n} queries look "
                   "at no later key.")
    return Probe(view(probe.rec, "first positions", (n,), cut), probe.tokens[:n], probe.typed)


def focused_trace(rec: engine.Recording, stack: str | None, kind: str, layer: int) -> engine.AttentionTrace:
    sites = cattention.sites_of(rec, stack if len(rec.stacks) > 1 else None, kind)
    return rec.attention_traces[sites[min(layer, len(sites) - 1)]]


# ------------------------------------------------------------------ the live figures

def draw(lab: Lab) -> None:
    part = parts.chosen(lab)
    stack = part.stack if len(part.rec.stacks) > 1 else None
    kind = chosen_kind(lab, part.stack)
    probe = probe_of(lab, say=False)  # run() said what was wrong with the text, once
    if probe is None:
        return
    rec = probe.rec
    if probe.typed:
        st.caption(f"Recorded at step {lab.probes.recorded_at:,} on your text.")
    else:
        parts.recorded_caption(lab, part.index)
    long = max(max(t.weights.shape[1:]) for t in rec.attention_traces.values()) > GRID_HEADS_UP_TO
    average = long or bool(state.get(state.SA_AVERAGE))
    # Each figure once per recording and choice: a tick between two recordings (Lab.recording) sends them as they were.
    grid = view(rec, "sa_grid", (stack, kind, average), lambda: cattention.head_grid(rec, probe.tokens, stack, kind,
                                                                                     average=average))
    show(grid, "sa_grid")
    if long:
        st.caption(f"Over {GRID_HEADS_UP_TO} positions the grid shows each layer's mean of heads (every head "
                   "would be 14 MB a redraw at 512); pick a head for the full-size map below.")
    st.caption(grid_caption(lab, kind))
    trace = focused_trace(rec, stack, kind, part.layer)
    query_tokens, key_tokens = cattention.tokens_for(trace.site, probe.tokens)
    chosen = state.get(state.SA_HEAD, 0)
    head = None if chosen == MEAN else int(chosen)
    show(view(rec, "sa_focused", (trace.site, head), lambda: cattention.focused_head(trace, head, query_tokens,
                                                                                    key_tokens)), "sa_focused")
    st.caption("One map at full size: point at a cell for its query, key and weight. Each row sums to 1. "
               + ("The mean of the heads hides what each one does: compare it with the heads in the grid."
                  if head is None else "Heads of one layer look at different things: pick another head above."))
    lines(rec, trace, head, query_tokens, key_tokens, kind)
    pair_head = 0 if head is None else head
    query = min(state.get(state.SA_QUERY, 0), trace.weights.shape[1] - 1)
    d_k = cscaling.d_k_of(trace)
    show(view(rec, "sa_scaled", (trace.site, pair_head, query),
              lambda: cscaling.scaled_logits(trace, pair_head, query, key_tokens)), "sa_scaled")
    show(view(rec, "sa_entropy", (trace.site, pair_head), lambda: cscaling.row_entropy(trace, pair_head, query_tokens)),
         "sa_entropy")
    st.caption(
        f"Why divide by √d_k = √{d_k} ≈ {math.sqrt(d_k):.2f}"
        + (f" (head {pair_head}: the mean of heads has no scores of its own)" if head is None else "")
        + ": a dot product of two d_k-wide vectors grows with d_k, and a softmax of large scores puts nearly all "
        "its weight on one key, where its gradient is nearly 0. Orange is what this head would do without the "
        "scaling: sharper weights and lower entropy; blue is what it does. Far below the dotted line, the "
        "softmax is saturated.")
    frame = view(rec, "sa_head_frame", (trace.site, head),  # once per recording, as the figures are
                 lambda: head_frame(trace, head, query_tokens, key_tokens))
    st.session_state.setdefault(state.SA_DRAWN, {}).update(grid=grid, head=frame)


def lines(rec: engine.Recording, trace: engine.AttentionTrace, head: int | None, query_tokens: list[str],
          key_tokens: list[str], kind: str) -> None:
    """The focused head as lines from each query to the keys it looks at, beside what to look for.
    Its numbers are the focused head's CSV: nothing new to download."""
    query = state.get(state.SA_LINES_QUERY)  # in range: pick_lines_query reset one picked on a longer sequence
    figure, words = st.columns([3, 2])  # the lines as narrow as BertViz's: slopes read, and the caption beside
    show(view(rec, "sa_lines", (trace.site, head, query),
              lambda: clines.attention_lines(trace, head, query_tokens, key_tokens, query)), "sa_lines", where=figure)
    words.caption(lines_caption(trace, kind, trace.weights.shape[1], query))


def lines_caption(trace: engine.AttentionTrace, kind: str, T_q: int, query: int | None) -> str:
    said = ("The same head as lines: each query (left) to every key (right) it takes weight from, the darker and "
            "wider the more it takes; each query's lines add up to 1. ")
    if kind == "cross":
        said += ("A query's key is a source token: on reversal a trained model's lines cross, the first target "
                 "token looking at the last source token. ")
    elif cattention.masked_of(trace).any():
        said += ("Look for a head whose lines all run straight across (each token looks at itself) or one step up "
                 "(at the token before). No line runs down: the causal mask gives a later token exactly 0. ")
    else:
        said += ("No mask: lines run up and down. Look for a head whose lines run straight across (each token "
                 "looks at itself) or all to one token. ")
    if query is None and T_q > clines.LINES_UP_TO:
        said += (f"Over {clines.LINES_UP_TO} queries every line at once is a blur: these are the lines of the "
                 f"first {clines.LINES_UP_TO}. Pick one query above to see its own.")
    elif query is None:
        said += "Pick one query above to see its lines alone."
    return said


def grid_caption(lab: Lab, kind: str) -> str:
    if kind == "cross":
        return ("Cross-attention: each target token the decoder writes (down) looks at the source (across). "
                "On reversal a trained model reads the source from the end: the anti-diagonal.")
    masked = encdec(lab) and state.get(state.STACK) == "decoder" or causal_only(lab)
    return ("Every layer (rows) and head (columns) on one scale, 0 white to 1 dark blue. "
            + ("The grey triangle is the causal mask: a token may not look at the ones after it (weight exactly 0). "
               if masked else "No mask: every token looks at every other, before and after. ")
            + "A head that lights the diagonal looks at each token itself; one that lights the cells just left of "
            "the diagonal looks at the token before.")


def head_frame(trace: engine.AttentionTrace, head: int | None, query_tokens: list[str], key_tokens: list[str]
               ) -> pd.DataFrame:
    """The weights of the shown head (or their mean), one row per query and key."""
    weights = trace.weights[head] if head is not None else trace.weights.mean(dim=0)  # [T_q, T_k]
    q, k = torch.meshgrid(torch.arange(weights.shape[0]), torch.arange(weights.shape[1]), indexing="ij")
    return pd.DataFrame({"site": trace.site.label, "head": MEAN if head is None else head,
                         "query": q.flatten().numpy(), "query_token": [query_tokens[i] for i in q.flatten().tolist()],
                         "key": k.flatten().numpy(), "key_token": [key_tokens[i] for i in k.flatten().tolist()],
                         "weight": weights.flatten().double().numpy()})


def downloads(lab: Lab) -> None:
    """What the live figures drew last (a download is made on click, in another thread)."""
    drawn = st.session_state.setdefault(state.SA_DRAWN, {})
    name = exports.stem(lab)
    with st.expander(exports.EXPANDER):
        left, right = st.columns(2)
        left.download_button("Weights of the focused head (.csv)", lambda: drawn["head"].to_csv(index=False),
                             f"{name}-attention-head.csv", mime="text/csv")
        right.download_button("Grid of every head, interactive (.html)",
                              lambda: drawn["grid"].to_html(include_plotlyjs=True), f"{name}-attention-grid.html",
                              mime="text/html")
        st.caption(exports.PNG_NOTE)


run()
