"""Home: what Unrolled is, and what the engine can already do."""
import streamlit as st

import engine

COMING = [
    ("Build & Train", "pick a task and a network, then play, pause and step its training"),
    ("Unroll", "step through time: inputs, hidden states and outputs at every t"),
    ("Gates", "LSTM and GRU gate activations over time"),
    ("Gradients", "BPTT gradient norms per step: vanishing, exploding, clipping, truncation"),
    ("Attention & transformers", "where an encoder-decoder or a transformer head looks"),
]


def run() -> None:
    st.title("Unrolled")
    st.markdown(
        "Build, train and open up recurrent networks live, on this computer's CPU: hidden states "
        "unrolled through time, LSTM and GRU gates, and the gradient that backpropagation through "
        "time sends to every step."
    )
    st.subheader("Pages on the way")
    for name, what in COMING:
        st.markdown(f"- **{name}**: {what}")
    st.subheader("Lessons the engine already trains")
    st.caption("Each task's preset, measured on a 2-core CPU; the Build & Train page will load them.")
    for name, task in engine.TASKS.items():
        preset = task.preset
        model = f"{preset.model.arch.upper()}, {preset.model.hidden_size} units"
        st.markdown(f"**{name}** ({model}, {preset.steps} steps): {preset.lesson}")
