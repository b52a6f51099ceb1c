"""Words and symbols every figure and page shares: axis titles, loss units, and the one map
of whitespace to visible marks. No streamlit here."""
from __future__ import annotations

STEP_AXIS = "training step"  # one batch each: "training step (one batch each)" was cut in a half column, presented
T_AXIS = "time step t"
LOSS_UNITS = {"accuracy": "cross-entropy, nats", "R²": "MSE"}  # the loss that goes with each metric
# Whitespace as a visible mark (a tick label or a coloured token would show nothing), and the
# characters plotly would read as HTML, escaped.
VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍", "<": "&lt;", ">": "&gt;", "&": "&amp;"}


def visible(token: str) -> str:
    """A token as tick or hover text: whitespace as a visible symbol (␣ ↵ ⇥), and < > & escaped
    (plotly reads its text as HTML)."""
    return "".join(VISIBLE.get(ch, ch) for ch in str(token))
