"""Every figure goes on the page through show(): the presentation setting (larger type, for a
projector) and the camera button's export (size, PNG or SVG) apply to all of them in one place."""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from app.charts.style import PAGE_CHARS, export_config, for_projector, wrap_title
from app.widgets import state

EXPORT_FORMATS = ("png", "svg")  # what plotly.js's toImage draws that a slide can hold


def figure_settings() -> None:
    """In the sidebar of every page: presentation mode, which a teacher turns on in front of a
    class, and what the camera button on every figure saves."""
    st.sidebar.toggle("Presentation mode", key=state.PRESENTATION, persist_state="session", on_change=switched,
                      help="larger type, thicker lines, fewer ticks, legends under the plots, the sidebar folded "
                      "away (its arrow at the top left brings it back): for a projector")
    if st.session_state.pop(state.PRESENTATION_SWITCHED, False):
        # Only on the run the toggle starts: the browser folds or opens the sidebar when the setting
        # changes, and a teacher who opens it again in presentation mode keeps it open.
        st.set_page_config(initial_sidebar_state="collapsed" if state.get(state.PRESENTATION) else "expanded")
    if state.get(state.PRESENTATION):
        st.html("<style>[data-testid='stMain'] {font-size: 1.15rem;} "
                "[data-testid='stMain'] [data-testid='stCaptionContainer'] {font-size: 1.0rem;}</style>")
    # Its value in the session, not a default: a reload restores it there (KEPT_WITH_THE_LAB), and a widget given
    # both logged Streamlit's warning on every reload
    st.session_state.setdefault(state.EXPORT_FORMAT, "png")
    st.sidebar.segmented_control(
        "Camera button saves", EXPORT_FORMATS, key=state.EXPORT_FORMAT, required=True,
        persist_state="session", format_func=str.upper,
        help="PNG at slide size (1600 px wide, twice the pixels), or SVG: lines and text that stay sharp "
        "at any size, for slides and papers (a heatmap inside it stays a picture)")


def switched() -> None:
    """The presentation toggle moved: the run it starts folds the sidebar away (on) or opens it (off),
    so the figures get the whole width of a projector."""
    st.session_state[state.PRESENTATION_SWITCHED] = True


def camera_config(fig: go.Figure) -> dict:
    """The figure's export settings, in the format the sidebar asks for (plotly.js draws either
    one in the browser: nothing is rendered on the server)."""
    config = export_config(fig)
    config["toImageButtonOptions"]["format"] = state.get(state.EXPORT_FORMAT) or "png"
    return config


def show(fig: go.Figure, key: str, where=st, diagram: bool = False, narrow: bool | None = None) -> None:
    """st.plotly_chart(fig) in `where` (a column, or the page), as the presentation setting asks
    (a diagram's boxes are sized to their text: only the diagram grows, not its words). `narrow`:
    whether `where` is half a page wide or less; by default anything but the page is (a column),
    and a caller that stacks full-width containers in its place says so (Streamlit tells a block's
    kind only through private API)."""
    shown = for_projector(fig, diagram) if state.get(state.PRESENTATION) else fig
    # A long title breaks, at half a page's width in a column (a diagram's too: "RNN (tanh), 1 layer × 64
    # units — 4,417 parameters" was cut at 1024 px), else at a page's (the forced beam's tree ran past it).
    narrow = where is not st if narrow is None else narrow
    shown = wrap_title(shown, chars=34 if narrow else PAGE_CHARS)
    where.plotly_chart(shown, key=key, config=camera_config(shown))
