"""Build & Train beside the recall task: how long a lag each cell learns, measured once here
(app/session/memory_span.py), not trained in the student's session."""
from __future__ import annotations

import streamlit as st

from app.charts.memory_span import memory_span_curves
from app.session import memory_span as measured_span
from app.session.lab import Lab
from app.widgets import state
from app.widgets.figures import show


def expander(lab: Lab) -> None:
    """The measured chart and what it shows, in an expander open while the lesson that asks for it is."""
    means, meta = measured_span.shipped()
    settings = meta["settings"]
    spans = measured_span.shipped_spans()
    open_lesson = state.get(state.LESSON) == "recall-lag"
    with st.expander("Short-term memory, measured: the longest lag each cell learns", expanded=open_lesson):
        show(memory_span_figure(lab.task.lag), "memory_span")
        st.caption(memory_span_caption(spans, settings, meta, lab))


@st.cache_resource(max_entries=64, show_spinner=False)
def memory_span_figure(lag: int):
    """The shipped measurement with a lag marked, built once per lag for the whole server (27 ms,
    a quarter of the page's run otherwise): it holds nothing a student trained, and Streamlit
    copies a figure before sending it."""
    means, meta = measured_span.shipped()
    return memory_span_curves(means, meta["settings"], measured_span.shipped_spans(), lag)


def memory_span_caption(spans: dict, settings: dict, meta: dict, lab: Lab) -> str:
    learned = ", ".join(f"{cell} {'none' if lag is None else f'up to lag {lag}'}" for cell, lag in spans.items())
    t, m = settings["train"], settings["model"]
    yours = ("" if measured_span.measures(settings, lab.setup) else
             " Your setup is not one of these four (its cell, size, training or symbols differ): the lines are "
             "theirs, not yours.")
    return (
        f"Each line: the recall-lag lesson's network ({m['hidden_size']} units; {t['optimizer'].capitalize()} at lr "
        f"{t['lr']:g}, batch {t['batch_size']}, clip {t['clip_norm']:g}) with one cell, on {settings['symbols']} "
        f"symbols and {settings['distractors']} distractors, trained from each of {len(settings['seeds'])} seeds at "
        f"each lag until it named {settings['learned']:.0%} of {settings['held_out']:,} held-out sequences (checked "
        f"every {settings['eval_every']} steps) or for {settings['steps']:,} steps. A point is the mean over the "
        f"seeds of each one's best score, the bars their range; a lag is learned when every seed reached "
        f"{settings['learned']:.0%}. Learned within the budget: {learned}. A seed that failed {settings['give_up']} "
        f"lags in a row was not trained at longer ones (hover a point: how many seeds it averages). The dashed "
        f"line is your lag ({lab.task.lag}).{yours} Measured {meta['measured']} with torch {meta['torch']} on this "
        "2-core CPU (benchmarks/memory_span.py)."
    )
