"""Gates: every LSTM or GRU gate over time, next to the equations that make them."""
from __future__ import annotations

import streamlit as st

from app.charts import gates as cgates
from app.charts.views import view
from app.session.lab import Lab
from app.widgets import downloads as exports
from app.widgets import parts, state
from app.widgets.controls import live, training_controls
from app.widgets.figures import show
from app.widgets.header import page_header
from engine.cells import EQUATIONS

PEEPHOLE_NOTE = (
    "Peepholes (Gers & Schmidhuber 2000): i_t and f_t also see c_{t−1} through the weights w_ci and w_cf, "
    "and o_t sees the new c_t through w_co, one weight per unit (⊙ multiplies unit by unit)."
)
HEATMAPS_CAPTION = {
    "lstm": (
        "Each panel is one gate: units up, time across; a sigmoid gate from 0 (dark) to 1 (bright), the "
        "candidate g_t and the cell state c_t blue negative, red positive. A forget gate that stays bright "
        "keeps the cell state; an input gate that lights up at one step writes it."
    ),
    "gru": (
        "Each panel is one gate: units up, time across; a sigmoid gate from 0 (dark) to 1 (bright), the "
        "candidate n_t blue negative, red positive. An update gate z_t that stays bright keeps h_{t−1} as it "
        "is (h_t = (1 − z_t) n_t + z_t h_{t−1}); one that goes dark at a step writes the candidate in. A reset "
        "gate r_t near 0 lets the candidate ignore the previous state."
    ),
}


def equations_of(cfg) -> str:
    """The LaTeX of the cell the model runs: an LSTM with or without peepholes, or a GRU."""
    return EQUATIONS["peephole" if cfg.arch == "lstm" and cfg.peephole else cfg.arch]


def run() -> None:
    lab = page_header("Gates", summary=False)
    cfg = lab.setup.model
    if cfg.arch == "rnn":
        st.info(
            "A vanilla RNN has no gates: h_t = tanh(W_ih x_t + W_hh h_{t−1} + b). Set the cell to LSTM "
            "or GRU on Build & Train (or open the lesson “LSTM gates at work”) to see them.",
            icon=":material/info:",
        )
        return
    st.latex(equations_of(cfg))  # the whole width: beside the picker, at 1024 px it was cut on the right
    for variant, said in (("layer_norm", "layer-normalised (every gate as i_t)"),
                          ("zoneout", f"with zoneout p = {cfg.zoneout:g}")):
        if getattr(cfg, variant):
            st.caption(f"and, {said}:")
            st.latex(EQUATIONS[variant])
    if cfg.peephole:
        st.caption(PEEPHOLE_NOTE)
    parts.pick(lab)
    training_controls(lab)
    live(lab, draw)
    downloads(lab)


def draw(lab: Lab) -> None:
    part = parts.chosen(lab)
    index, rec, stack, layer, direction = part.index, part.rec, part.stack, part.layer, part.direction
    tokens = lab.symbols(index, stack) if stack in (None, "encoder") else None  # the chart escapes them
    parts.recorded_caption(lab, index)
    show(view(rec, "gate_heatmaps", (stack, layer, direction, tuple(tokens or ())),
              lambda: cgates.gate_heatmaps(rec, stack, layer, direction, tokens, lab.probes)), "gate_heatmaps")
    st.caption(HEATMAPS_CAPTION[rec.arch])
    left, right = st.columns(2) if rec.arch == "lstm" else (st.container(), None)  # a GRU has no carousel
    show(view(rec, "saturation", (stack,), lambda: cgates.saturation(rec, stack)), "saturation", left,
         narrow=rec.arch == "lstm")
    left.caption(
        "A gate near 0 or 1 acts as a switch; its gradient is small there, so a saturated gate "
        "learns slowly."
    )
    if rec.arch == "lstm":
        unit = cgates.carousel_unit(rec, stack, layer, direction)
        show(view(rec, "carousel", (stack, layer, direction, unit),
                  lambda: cgates.constant_error_carousel(rec, stack, layer, direction, unit, lab.probes)),
             "carousel", right)
        right.caption(
            f"Unit {unit}, the one whose forget gate stays most open. Where f_t ≈ 1 and i_t ≈ 0, "
            "c_t = f_t c_{t−1} + i_t g_t cannot change: the constant error carousel, which carries "
            "both a memory and its gradient across time. How cleanly a trained network uses it is "
            "what this picture shows."
        )


def downloads(lab: Lab) -> None:
    """Made when clicked, from the model as it is then (see exports.py)."""
    recorded = exports.chosen_recording(lab)
    layer, direction = state.layer(), state.direction()

    def chosen_part(rec, stack) -> tuple[int, int]:
        layers, directions = (rec.stacks[stack] if stack else rec.main).hidden.shape[:2]
        return min(layer, layers - 1), min(direction, directions - 1)

    def heatmaps_html() -> str:
        rec, stack = recorded()
        return cgates.gate_heatmaps(rec, stack, *chosen_part(rec, stack)).to_html(include_plotlyjs=True)

    name = exports.stem(lab)
    with st.expander(exports.EXPANDER):
        cols = exports.button_row()
        what = "Gates and c_t (.csv)" if lab.setup.model.arch == "lstm" else "Gates (.csv)"  # a GRU has no c_t
        cols.download_button(
            what, lambda: cgates.gates_table(*recorded()).to_csv(index=False), f"{name}-gates.csv", mime="text/csv",
        )
        cols.download_button(
            "Saturation per gate (.csv)", lambda: cgates.saturation_table(*recorded()).to_csv(index=False),
            f"{name}-saturation.csv", mime="text/csv",
        )
        cols.download_button("Gate heatmaps, interactive (.html)", heatmaps_html, f"{name}-gates.html",
                                mime="text/html")
        st.caption(exports.PNG_NOTE)


run()
