"""What the pages of runs that log their parts (Transfer learning, Pretrained embeddings) offer under
their figures: one run's model opened in the Lab, and every measurement as CSV."""
from __future__ import annotations

import copy

import streamlit as st

from app.session.comparison import TrainedRun
from app.session.lab import Lab
from app.session.link import Setup
from app.session.transfer import PartRuns
from app.widgets import downloads as exports
from app.widgets import state
from app.widgets.literal import literal


def open_in_lab(runs: PartRuns, run: TrainedRun, setup: Setup, lab: Lab, key: str, label: str, help: str) -> None:
    """A button that copies `run`'s model into the Lab, every part of it training there (a frozen part
    stays frozen in a copy otherwise), on `setup` and the reviews the runs read (an upload's, which a
    word-level model's vocabulary comes from); the Lab keeps its model if it is refused."""
    if not st.button(label, key=key, icon=":material/open_in_new:", help=help):
        return
    with runs.lock:
        model = copy.deepcopy(run.model)
    for parameter in model.parameters():
        parameter.requires_grad_(True)
    try:
        lab.install(setup, runs.task.csv_text, model)
    except ValueError as err:
        st.error(f"It could not be opened ({literal(err)}). The model you had is unchanged.", icon=":material/block:")
        return
    st.session_state[state.TARGET_STEPS] = run.steps_done
    st.success(f"Opened at step {run.steps_done:,}: Build & Train, Unroll and Gates now show it.",
               icon=":material/check_circle:")


def downloads(runs: PartRuns, which: str, name: str) -> None:
    """Every measurement of the runs (`which`: "Both runs'", ...; `name`: the files' middle), read
    without the lock: rows are only appended, each whole."""
    with st.expander(exports.EXPANDER):
        st.download_button(f"{which} held-out scores (.csv)", lambda: runs.log_frame().to_csv(index=False),
                           f"unrolled-{name}-scores.csv", mime="text/csv")
        st.download_button("Every part's gradient and movement (.csv)",
                           lambda: runs.parts_frame().to_csv(index=False), f"unrolled-{name}-parts.csv",
                           mime="text/csv")
        st.caption(exports.PNG_NOTE)
