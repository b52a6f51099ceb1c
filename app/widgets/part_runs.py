"""What the pages of runs trained side by side from a plan (Transfer learning, Pretrained embeddings, BERT
and GPT) share: their runs renewed when the plan changes, one run's model opened in the Lab, and every
measurement as CSV."""
from __future__ import annotations

import copy
from collections.abc import Callable

import streamlit as st

from app.session.comparison import RoundRobin, TrainedRun
from app.session.lab import Lab
from app.session.lessons import Lesson
from app.session.link import Setup
from app.session.transfer import PartRuns
from app.widgets import downloads as exports
from app.widgets import state
from app.widgets.corpus_needed import corpus_needed
from app.widgets.literal import literal
from engine import datasets


def renewed(old: RoundRobin | None, make: Callable[[], RoundRobin], keys: tuple[str, str, str], lesson: Lesson,
            plan_of: Callable[[RoundRobin | None], object], what: str, why_corpus: str = "") -> RoundRobin | None:
    """The runs `make` builds for a new plan, in the session under keys (runs, plan, "up to step"),
    their budget the lesson's when it is open (or when none was set); `old` stops playing. When
    `make` refuses the plan: its reason on the page ("`what` cannot be trained: ..."), the plan set
    back to plan_of(old) (the lesson's when there were none), and the old runs kept; when the plan
    reads a public corpus this machine lacks, what to download (`why_corpus`: what on the page
    needs it, a sentence; by default "`what` train on it.")."""
    runs_key, plan_key, steps_key = keys
    try:
        made = make()
    except datasets.CorpusMissing as missing:
        corpus_needed(missing, why_corpus or f"{what} train on it.", "runs")
        st.session_state[plan_key] = plan_of(old)
        return old
    except ValueError as err:
        st.error(f"{what} cannot be trained: {literal(err)}.", icon=":material/block:")
        st.session_state[plan_key] = plan_of(old)
        return old
    if old is not None:
        old.playing = False  # a fragment still training them stops at its next step
    st.session_state[runs_key] = made
    if state.get(state.LESSON) == lesson.key or steps_key not in st.session_state:
        st.session_state[steps_key] = lesson.steps
    return made


def open_in_lab(runs: RoundRobin, run: TrainedRun, setup: Setup, lab: Lab, key: str, label: str, help: str) -> None:
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
        lab.install(setup, getattr(runs.task, "csv_text", None), model)  # a task that reads no file has none
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
