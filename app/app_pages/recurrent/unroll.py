"""Unroll: step through one sample in time and watch the hidden state, the gates and the output."""
from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from app import pages
from app.charts import step_labels
from app.charts import unroll as cu
from app.charts import unroll_bars as cb
from app.charts import unroll_time as ct
from app.charts.views import view
from app.session.lab import Lab
from app.widgets import downloads as exports
from app.widgets import parts, state
from app.widgets.figures import show
from app.widgets.header import page_header
from engine.units import correlated_units

PLAY_SECONDS = 0.6  # between two steps while playing through time


def run() -> None:
    lab = page_header("Unroll through time")
    st.markdown(
        "A recurrent network is one cell applied at every step: $h_t = f(x_t, h_{t-1})$. Drawn "
        "unrolled, it is a deep network with one layer per time step and the same weights in every "
        "layer. Move through the steps and watch what the state carries forward."
    )
    parts.pick(lab, layer="Layer (heatmap, gates, units)", direction="Direction (gates, units)")
    st.caption(
        f"Recorded on the model as it is after {lab.trainer.steps_done:,} training steps. Train it further on "
        "Build & Train (or the Gates and Gradients pages) and come back: the pictures follow."
    )
    if not st.session_state.pop(state.UNROLL_CLICKED, False):  # any other full run (arriving, a control) pauses
        st.session_state[state.UNROLL_PLAYING] = False
    playing = st.session_state[state.UNROLL_PLAYING]
    st.button("Pause" if playing else "Play through time", key="unroll_play", type="primary",
              icon=":material/pause:" if playing else ":material/play_arrow:",
              on_click=set_playing, args=(not playing,))
    st.fragment(run_every=PLAY_SECONDS if playing else None)(stepper)(lab)
    downloads(lab)
    st.page_link(pages.PATHS["build"], label="Change or train the model on Build & Train",
                 icon=":material/model_training:")


def set_playing(playing: bool) -> None:
    """The Play/Pause button's callback. Play at the last step starts again from the first."""
    st.session_state[state.UNROLL_PLAYING] = playing
    st.session_state[state.UNROLL_CLICKED] = True
    if playing and state.get(state.UNROLL_T, 0) >= state.get(state.UNROLL_LAST_STEP, 0):
        st.session_state[state.UNROLL_T] = 0


def stepper(lab: Lab) -> None:
    """Everything that depends on t, run as a fragment: moving the slider reruns only this, on
    the same recording; while playing it reruns every PLAY_SECONDS and moves t on by one."""
    part = parts.chosen(lab)
    index, rec, stack, trace = part.index, part.rec, part.stack, part.trace
    layer, direction = part.layer, part.direction
    T = trace.hidden.shape[2]
    st.session_state[state.UNROLL_LAST_STEP] = T - 1
    t = min(state.get(state.UNROLL_T, 0), T - 1)
    if state.get(state.UNROLL_PLAYING):
        if t >= T - 1:
            st.session_state[state.UNROLL_PLAYING] = False
            st.rerun()  # the whole page: the button says Play again, the timer stops
        t += 1
    if state.get(state.UNROLL_T) != t:
        # Only a step the script moves (playing, or a shorter sample): a value written back to the
        # slider is sent to it and puts its thumb there, and under a burst of arrow presses the
        # thumb has moved on meanwhile, so every such write lost the presses made during a run.
        st.session_state[state.UNROLL_T] = t
    st.slider("Time step t", min_value=0, max_value=T - 1, key=state.UNROLL_T, persist_state="session")
    symbols = lab.symbols(index, stack) if stack != "decoder" else None
    inputs = step_labels.input_labels(lab.task, rec, stack, symbols)
    outputs = step_labels.output_labels(lab.task, rec, stack)
    reads = cu.head_reads(lab.model.describe())  # the states the head reads, as the model says
    show(cu.unrolled_diagram(rec, stack, t, inputs, outputs, reads), "diagram", diagram=True)
    pads = ct.pad_steps(trace, symbols, lab.task.pad_symbol)  # [T] bool or None
    said = f" and answers **{step_labels.literal(outputs[t])}**" if outputs[t] else ""
    padding = " (padding: no data, the state passes through unchanged)" if pads is not None and pads[t] else ""
    st.markdown(f"At step **t = {t}** the network reads **{step_labels.literal(inputs[t])}**{padding}{said}.")
    st.caption(
        "Every box is the same cell with the same weights; only its inputs differ. The arrows along a "
        "row are all the network remembers from the steps before"
        + (" (for a bidirectional layer, the orange ones: from the steps after)." if trace.hidden.shape[1] > 1 else ".")
    )
    if trace.gates:
        left, right = st.columns(2)
        show(cb.state_at(rec, stack, t), "state", left)
        show(cb.gates_at(rec, stack, layer, direction, t), "gates_at", right)
        right.caption("The gates that made h_t at this step: a sigmoid gate 0..1 (blue bars), "
                      "a tanh candidate −1..1 (vermillion bars).")
    else:
        show(cb.state_at(rec, stack, t), "state")
    st.caption("h_t of every unit at this step, on the scale of the whole sample, so the bars move as you step.")
    tokens = step_labels.input_symbols(lab.task, rec, stack, symbols)  # the chart escapes them, once
    show(ct.hidden_heatmap(rec, stack, layer, t, tokens, pads), "heatmap")
    st.caption(
        "Units up, time across, red positive and blue negative. A unit that changes colour at one kind of "
        "input and keeps it afterwards is remembering something."
    )
    if trace.hidden.shape[1] > 1:
        show(cb.concatenation_at(rec, stack, layer, t, reads), "concatenation")
        fixed = [r for r in reads if r.t is not None and r.layer == layer == trace.hidden.shape[0] - 1
                 and r.stack == cu.stack_name(rec, stack)]
        if fixed:  # a seq2vec head: the last forward state and the backward state at step 0
            T = trace.hidden.shape[2]
            st.caption(
                f"The output reads the forward state after the last step, h→_{T - 1}, which has read x_0..x_{T - 1}, "
                f"and the backward state at step 0, h←_0, which has read the sample from its end back to its "
                f"start, x_{T - 1}..x_0: each has read the whole sequence, one from each end. That is what "
                "bidirectional buys: the first steps reach the answer through one step, not through all of them."
            )
        else:
            st.caption(
                "The forward state has read the sample up to t, the backward state from the end back to t: side "
                "by side, each step sees the whole sequence. That is what bidirectional buys"
                + (". Here, though, the model answers at every step, and the backward state has already read "
                   "the steps after t: where the answer lies ahead (the next character, the next value of the "
                   "sine), it has seen it, and a good score means nothing." if lab.task.spec.mapping == "seq2seq"
                   else ".")
            )
    hunt_units(lab, rec, stack, trace, layer, direction, t, symbols, pads)


def hunt_units(lab: Lab, rec, stack, trace, layer: int, direction: int, t: int, symbols: list[str] | None,
               pads: np.ndarray | None) -> None:
    """The input coloured by one unit, and the units that follow simple features of the input,
    over the real steps only: on padding the state only passes through, and a feature such as
    "is padding" would lead the hunt for nothing (issue 12, item 10)."""
    st.subheader("Hunt for interpretable units")
    hidden = trace.hidden[layer, direction]  # [T, H]
    table = None
    if stack != "decoder":
        features = view(rec, "unit features", (stack,), lambda: lab.task.unit_features(symbols, rec.x))
        real = np.ones(hidden.shape[0], dtype=bool) if pads is None else ~pads  # [T]
        if real.any():  # both worked out once per recording (and layer): stepping through t moves neither
            table = view(rec, "units", (stack, layer, direction), lambda: correlated_units(
                hidden[torch.from_numpy(real)], {k: v[real] for k, v in features.items()}))
    H = hidden.shape[1]
    if state.get(state.UNROLL_UNIT, H) >= H:  # none chosen yet, or for a wider model: the best lead
        st.session_state[state.UNROLL_UNIT] = int(table["unit"].iloc[0]) if table is not None and len(table) else 0
    text, units = st.columns([1, 1], gap="large")  # at 3:2 the table's r column was cut at 1024 px
    with units:
        st.number_input("Unit", min_value=0, max_value=H - 1, step=1, key=state.UNROLL_UNIT, persist_state="session")
        if table is not None and len(table):
            # r and the unit first: a long feature name ("sum of marked values so far") pushed r out
            # of the half page at 1024 px; now only the name's end may be cut
            st.dataframe(table, hide_index=True, width="stretch", column_order=("r", "unit", "feature"),
                         column_config={"r": st.column_config.NumberColumn(format="%+.2f")})
            st.caption(
                "Pearson's r between a unit's h_t and a feature of the input over this sample's steps"
                + (f" ({int(real.sum())} of them: its {int(pads.sum())} padding steps left out)" if pads is not None
                   else "")
                + ": the units most worth a look. r near ±1 on one sample is a lead, not a proof: try another sample."
            )
    unit = st.session_state[state.UNROLL_UNIT]
    with text:
        if symbols is not None:
            values = hidden[:, unit].numpy()  # [T]
            st.markdown(f"The sample coloured by unit **{unit}**'s h_t: red positive, blue negative, white 0; "
                        f"step t = {t} framed; hover a token for its value"
                        + ("; padding in grey." if pads is not None else "."))
            st.html(ct.coloured_tokens(symbols, values, t, spaced=lab.task.symbol_separator != "", pads=pads))
        else:
            feature = None
            if table is not None and len(table):
                best = table[table["unit"] == unit]
                name = best["feature"].iloc[0] if len(best) else table["feature"].iloc[0]
                feature = (name, features[name])
            over_time = ct.unit_over_time(rec, stack, layer, direction, unit, t, feature)
            show(over_time, "unit_over_time", text)  # in its column, so its title breaks (cut at 1024 px)
            st.caption("The unit's h_t over the sample, beside the input feature it follows most closely.")


def downloads(lab: Lab) -> None:
    """Made when clicked, from the model as it is then (see exports.py)."""
    recorded = exports.chosen_recording(lab)
    layer, t = state.layer(), state.get(state.UNROLL_T, 0)

    def heatmap_html() -> str:
        rec, stack = recorded()
        trace = rec.stacks[stack] if stack else rec.main
        layers, _, T, _ = trace.hidden.shape
        return ct.hidden_heatmap(rec, stack, min(layer, layers - 1), min(t, T - 1)).to_html(include_plotlyjs=True)

    name = exports.stem(lab)
    with st.expander(exports.EXPANDER):
        cols = exports.button_row()
        cols.download_button("Hidden and cell states (.csv)" if lab.setup.model.arch == "lstm"
                                else "Hidden states (.csv)",
                                lambda: ct.states_table(*recorded()).to_csv(index=False), f"{name}-states.csv",
                                mime="text/csv")
        if lab.setup.model.arch != "rnn":
            cols.download_button(
                "Gates (.csv)", lambda: recorded()[0].to_frame("gates", recorded()[1]).to_csv(index=False),
                f"{name}-gates.csv", mime="text/csv",
            )
        cols.download_button("Hidden-state heatmap, interactive (.html)", heatmap_html, f"{name}-heatmap.html",
                                mime="text/html")
        st.caption(exports.PNG_NOTE)

run()
