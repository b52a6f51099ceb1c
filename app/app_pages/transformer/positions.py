"""Positional encoding: the sinusoid a transformer adds to each token (Vaswani et al. 2017, the
course's eq. 15 and its worked value at d = 512, position 22), and a learned table training live."""
from __future__ import annotations

import streamlit as st
import torch

from app.app_pages.transformer.models import copied, is_transformer, shadowed
from app.charts import positional as cpos
from app.charts.positional import COURSE_D, COURSE_DIMS, COURSE_POS
from app.session.lab import Lab
from app.session.lessons import BY_KEY
from app.session.transformers import LEARNED_REVERSAL
from app.widgets import state
from app.widgets.controls import live, training_controls
from app.widgets.figures import show
from app.widgets.header import page_header, sidebar_summary
from app.widgets.open_model import open_button

FORMULA = (r"pe_{p,i} = \begin{cases} \sin\left(\dfrac{p}{10000^{i/d}}\right) & i \text{ even} \\[6pt]"
           r"\cos\left(\dfrac{p}{10000^{(i-1)/d}}\right) & i \text{ odd} \end{cases}")
MAX_POSITIONS, MAX_D = 512, 1024
POSITIONS_LESSON = BY_KEY["positions"]  # its model is LEARNED_REVERSAL: the page quotes its measured ranges
LEARNED_STEPS = 400  # reversal with learned positions: held-out accuracy 1.0 by step 100 here (2026-11-23)


def run() -> None:
    lab = page_header("Positional encoding", summary=False)  # a live fragment draws it while a table learns
    if not learned(lab):
        sidebar_summary(lab)
    st.markdown(
        "Self-attention is blind to order: shuffle the tokens and every output shuffles with them. So a "
        "transformer adds to each token's embedding a vector that says **where** it is, the positional "
        "encoding (eq. 15 of the GWU RNN lecture (Huang), *d* the model's width):")
    st.latex(FORMULA)
    max_len, d_model, pos, pair = controls()
    show(cpos.encoding_heatmap(max_len, d_model, pos, (pair, pair + 1)), "pe_heatmap")
    st.caption(
        f"Each row is one position's vector, each column one dimension. Read the framed cells: position {pos}, "
        f"dimensions {pair} and {pair + 1}"
        + (" — the GWU lecture's worked example (d = 512, the 22nd word)."
           if (d_model, pos, pair) == (COURSE_D, COURSE_POS, COURSE_DIMS[0]) else ".")
        + " On the left the waves turn fast (stripes change from row to row); to the right they turn ever "
        "more slowly, until whole columns are nearly constant: every position gets a different pattern.")
    dims = curve_dims(d_model, pair)  # full width, one under the other: side by side at 1024 px the legend and
    show(cpos.dimension_curves(max_len, d_model, dims, pos), "pe_curves")  # subtitle ran into the axes
    st.caption(
        "Each pair of dimensions (i, i+1), i even, is a clock: a sine and a cosine of one frequency, one hand "
        "turning as the position grows, slower for larger i. Dimension 0 turns once every 2π ≈ 6.3 positions, "
        f"dimension {dims[-2]} once every {period(d_model, dims[-2]):,.0f}. Together the clocks tell every "
        "position apart, like the hands of a watch.")
    show(cpos.position_similarity(max_len, d_model), "pe_similarity")
    st.caption(
        "The dot product of two positions' vectors. Neighbours share most of their slow clocks, so "
        "near positions look alike (bright along the diagonal), and the fall-off with distance is the "
        "same from every position: attention can read how far apart two tokens are from a dot product.")
    learned_positions(lab, max_len)


def controls() -> tuple[int, int, int, int]:
    """Positions and width of the table, and the cell to read (position, dimension pair), each
    kept in range of the others (a keyed widget refuses a value outside its range)."""
    size, width, at, dims = st.columns(4)
    max_len = size.slider("Positions shown", 8, MAX_POSITIONS, 64, step=8, key=state.PE_POSITIONS,
                          persist_state="session", help="rows of the table: positions 0 .. this − 1")
    d_model = width.slider("Width d (d_model)", 8, MAX_D, COURSE_D, step=8, key=state.PE_WIDTH, persist_state="session",
                           help="the model's width; the GWU lecture and Vaswani et al. use 512")
    # The course's cell by default, kept in range of the table (see models.shadowed).
    pos = min(state.get(state.PE_POSITION, COURSE_POS), max_len - 1)
    pair = min(state.get(state.PE_PAIR, COURSE_DIMS[0]), d_model - 2)
    shadowed(state.PE_POSITION, state.PE_POSITION_BOX, pos)
    shadowed(state.PE_PAIR, state.PE_PAIR_BOX, pair)
    pos = at.number_input("Position p to read", 0, max_len - 1, key=state.PE_POSITION_BOX, on_change=copied,
                          args=(state.PE_POSITION, state.PE_POSITION_BOX))
    pair = dims.number_input("Dimensions i, i+1 (i even)", 0, d_model - 2, step=2, key=state.PE_PAIR_BOX,
                             on_change=copied, args=(state.PE_PAIR, state.PE_PAIR_BOX),
                             help="a sine and its cosine: one clock")
    return max_len, d_model, int(pos), int(pair) - int(pair) % 2


def curve_dims(d_model: int, pair: int) -> tuple[int, ...]:
    """Dimension 0 (the fastest clock), one in between, and the pair being read."""
    return tuple(sorted({0, pair, pair + 1} | ({10} if pair > 10 else set())))


def period(d_model: int, dim: int) -> float:
    """Positions per turn of dimension dim's clock: 2π · 10000^(2i/d)."""
    return 2 * 3.141592653589793 * 10000 ** ((dim - dim % 2) / d_model)


def learned(lab: Lab) -> bool:
    return is_transformer(lab) and lab.setup.model.position_encoding == "learned"


def learned_positions(lab: Lab, max_len: int) -> None:
    """A learned table training live beside the sinusoid, or the button that opens one."""
    st.subheader("Learned positions")
    if not learned(lab):
        what = ("Your model is not a transformer: it reads its inputs in order, one step at a time, and needs no "
                "position signal." if not is_transformer(lab) else
                "Your transformer adds no position signal (Positions: none): its self-attention sees which tokens "
                "there are, not in which order." if lab.setup.model.position_encoding == "none" else
                "Your transformer adds the fixed sinusoid above (d = its width, "
                f"{lab.setup.model.hidden_size}): nothing about positions to learn.")
        st.info(what + " A transformer can instead learn one vector per position, as BERT and GPT do. "
                "Open a small one on a task where positions are everything, reversing 8 symbols, and train it "
                "to see how far its table moves. "
                + POSITIONS_LESSON.quoted("By step 100 it reverses {{learned.accuracy_100}} of the held-out "
                                          "symbols (the positional-encoding lesson, over three seeds and two CPU "
                                          "kernel paths)."),
                icon=":material/info:")
        open_button(lab, "Open a transformer with learned positions (reverse 8 symbols)", LEARNED_REVERSAL,
                    LEARNED_STEPS, key="positions.open.learned")
        return
    training_controls(lab)
    live(lab, draw_learned)


def trained_positions(lab: Lab) -> int:
    """The positions the task trains: the longest stack's (an encoder-decoder's source and
    target share one table)."""
    rec = lab.recording(state.probe_index())
    return max(trace.hidden.shape[2] for trace in rec.stacks.values())  # each [layers, 1, T, d]


def start_of(lab: Lab, table: torch.Tensor) -> tuple[int, torch.Tensor]:
    """(step, table) the first time this page drew this model: its random start when that was
    before any training. A new model (Reset, a new setup) starts again."""
    start = state.get(state.PE_START)
    if start is None or start[0] is not lab.model:
        start = (lab.model, lab.trainer.steps_done, table.clone())
        st.session_state[state.PE_START] = start
    return start[1], start[2]


def draw_learned(lab: Lab) -> None:
    table = lab.model.positions.table.weight.detach().clone()  # [positions, d], under the lab's lock
    rows = min(trained_positions(lab), table.shape[0])
    step, start = start_of(lab, table)
    moved = (table[:rows] - start[:rows]).double()  # [rows, d]
    since = "its random start" if step == 0 else f"step {step:,}, when this page first drew it"
    held = lab.held_out.log.last
    score = "" if held is None else (f" Held-out {lab.task.metric_name}: {held['metric']:.1%} of the symbols right "
                                     f"(step {held['step']:,}).")
    st.caption(f"Recorded at step {lab.trainer.steps_done:,}. Since {since}, the {rows} rows trained have moved "
               f"{float(moved.norm() / start[:rows].double().norm()):.1%} (largest change "
               f"{float(moved.abs().max()):.3f}).{score}")
    show(cpos.learned_vs_sinusoidal(table, rows), "pe_learned")
    st.caption(
        "Left, the model's own table: one vector per position, starting as random numbers; right, the sinusoid "
        "of the same size. Random vectors of this width are already nearly orthogonal, so they tell the "
        "positions apart from the start, and training only nudges them (the positional-encoding lesson, on "
        + POSITIONS_LESSON.quoted("this reversal model over three seeds and two CPU kernel paths: "
                                  "{{learned.table_moved_100}} by step 100, when it reverses {{learned.accuracy_100}} "
                                  "of the held-out symbols). ") +
        "Nothing makes a learned table a smooth wave, and a position the task never shows (past "
        f"{rows - 1} here) keeps its random start: a learned table cannot read longer inputs than it was "
        "trained on; the sinusoid can.")


run()
