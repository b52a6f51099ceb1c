"""Gradients: how much of the loss's gradient reaches each time step (BPTT), and why."""
from __future__ import annotations

import streamlit as st

import charts_gradients as cg
import ui
from lab import PROBE_SAMPLES, RECORD_EVERY, Lab


def run() -> None:
    lab = ui.lab()
    st.title("Gradients through time")
    ui.show_link_problem()
    ui.lesson_banner()
    st.markdown(
        "Backpropagation through time sends the loss's gradient back from the last step to the "
        "first, multiplying by the Jacobian $\\partial h_{t+1}/\\partial h_t$ at every step:"
    )
    st.latex(
        r"\frac{\partial L}{\partial h_t} = \frac{\partial L}{\partial h_T}"
        r"\prod_{k=t+1}^{T} \frac{\partial h_k}{\partial h_{k-1}}"
        r"\quad\text{(plus the loss's direct terms at each step)}"
    )
    choose, stack_box = st.columns([1, 1])
    choose.number_input(
        "Sample to open up", min_value=0, max_value=PROBE_SAMPLES - 1, step=1, key="probe_index",
        persist_state="session", help="one of a few fixed samples the model never trains on",
    )
    stacks = list(lab.recording(0).stacks)
    if len(stacks) > 1:
        stack_box.radio("Stack", stacks, key="stack", horizontal=True, persist_state="session")
    ui.write_link(lab.setup)
    ui.training_controls(lab)
    ui.live(lab, draw)
    downloads(lab)


def draw(lab: Lab) -> None:
    index = st.session_state.get("probe_index", 0)
    rec = lab.recording(index)
    stack = st.session_state.get("stack") if st.session_state.get("stack") in rec.stacks else None
    st.caption(f"Recorded at step {lab.trainer.steps_done:,} on sample {index}.")
    vanilla = rec.arch == "rnn"  # the ρ^(T−t) theory is the vanilla RNN's
    st.plotly_chart(cg.gradient_through_time(rec, stack, theory=vanilla), key="through_time")
    st.caption(
        "Each line is ‖∂L/∂h_t‖ for one layer and direction; dashed, ‖∂h_T/∂h_t‖. Where the line "
        "falls into the red band, the first steps get less than a thousandth of the gradient the "
        "best-served step gets: the network cannot learn what happened there."
        + (" The grey line is ρ^(T−t), the decay the largest eigenvalue of W_hh predicts." if vanilla else "")
    )
    left, right = st.columns(2)
    left.plotly_chart(cg.eigenvalue_plane(rec, stack), key="eigenvalues")
    right.plotly_chart(cg.singular_values(rec, stack), key="singular_values")
    st.caption(
        "Outside the unit circle (σ > 1) a direction of h is stretched at every step and its "
        "gradient can explode; inside it shrinks and vanishes. An LSTM's gates decide per step "
        "how much of that matrix the gradient actually meets."
    )
    log = lab.gradient_frame()
    left, right = st.columns(2)
    ratio = log[["step", "ratio"]].assign(run=f"{lab.setup.model.arch.upper()}")
    left.plotly_chart(cg.gradient_ratio_over_training(ratio), key="ratio")
    params = log.drop(columns="ratio").melt(id_vars="step", var_name="parameter", value_name="value")
    right.plotly_chart(cg.parameter_gradient_norms(params), key="param_norms")
    st.caption(
        f"Measured every {RECORD_EVERY} training steps on sample 0. On the adding problem both an "
        "LSTM and a tanh RNN start near 3e-11; the LSTM learns to let the gradient through (above "
        "1e-2 after 3000 steps), the tanh RNN stays below 1e-3."
    )


def gradient_table(rec, stack: str | None):
    """‖∂L/∂h_t‖ and, when recorded, ‖∂h_T/∂h_t‖ per layer, direction and t."""
    frame = rec.to_frame("grad_norm_h", stack).rename(columns={"value": "grad_norm_h"})
    if (rec.stacks[stack] if stack else rec.main).jacobian_norm is not None:
        frame["jacobian_norm"] = rec.to_frame("jacobian_norm", stack)["value"].to_numpy()
    return frame


def downloads(lab: Lab) -> None:
    """Made when clicked (in another thread, hence the lock), from the model as it is then."""
    index, stack = st.session_state.get("probe_index", 0), st.session_state.get("stack")

    def recorded():
        with lab.lock:
            rec = lab.recording(index)
        return rec, stack if stack in rec.stacks else None

    name = f"unrolled-{lab.setup.task}-{lab.setup.model.arch}"
    with st.expander("Download the numbers and the figure"):
        cols = st.columns(4)
        cols[0].download_button(
            "Gradients per step (.csv)", lambda: gradient_table(*recorded()).to_csv(index=False),
            f"{name}-gradients.csv", mime="text/csv",
        )
        cols[1].download_button(
            "Eigenvalues of W_hh (.csv)", lambda: recorded()[0].to_frame("eigenvalues", recorded()[1]).to_csv(index=False),
            f"{name}-eigenvalues.csv", mime="text/csv",
        )
        cols[2].download_button(
            "Gradients over training (.csv)", lambda: lab.gradient_frame().to_csv(index=False),
            f"{name}-gradient-log.csv", mime="text/csv",
        )
        cols[3].download_button(
            "Gradients per step, interactive (.html)",
            lambda: cg.gradient_through_time(*recorded(), theory=lab.setup.model.arch == "rnn").to_html(
                include_plotlyjs=True
            ),
            f"{name}-gradients.html", mime="text/html",
        )
        st.caption("Every chart also saves as PNG from the camera icon in its top-right corner.")


run()
