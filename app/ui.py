"""Session helpers shared by every page: the student's Lab, the link in the address bar, the
sidebar summary."""
from __future__ import annotations

import streamlit as st

import engine
from lab import Lab
from lessons import BY_KEY
from settings import DEFAULT, Setup, parse_query

LAB = "lab"
TICK_SECONDS = 0.4  # how often a playing page redraws
TRAIN_SECONDS = 0.3  # training time per tick: the rest of the tick is drawing


def lab() -> Lab:
    """This session's Lab, made on first use from the link (or the defaults, with a message
    saying what in the link was wrong)."""
    if LAB not in st.session_state:
        query = st.query_params.to_dict()
        try:
            st.session_state[LAB] = Lab(parse_query(query) if query else DEFAULT)
        except ValueError as err:  # a bad value, or settings that cannot train together
            st.session_state["link_problem"] = (
                f"This link's settings could not be used ({err}). Unrolled started with the "
                "defaults instead: the adding problem with an LSTM."
            )
            st.session_state[LAB] = Lab(DEFAULT)
    return st.session_state[LAB]


def opened_sample(lab: Lab) -> tuple[int, engine.Recording, str | None]:
    """The probe sample chosen on the page, the model's recording of it, and the stack chosen
    (None for the first, or when the model has only one)."""
    index = st.session_state.get("probe_index", 0)
    rec = lab.recording(index)
    stack = st.session_state.get("stack")
    return index, rec, stack if stack in rec.stacks else None


def lesson_banner() -> None:
    """The open lesson's title and what to do, on the page it opened."""
    lesson = BY_KEY.get(st.session_state.get("lesson"))
    if lesson:
        st.info(f"**{lesson.title}.** {lesson.what_to_do}", icon=":material/school:")


def show_link_problem() -> None:
    problem = st.session_state.pop("link_problem", None)
    if problem:
        st.warning(problem, icon=":material/link_off:")


def write_link(setup: Setup) -> None:
    """Mirror the settings in the address bar, so the link reproduces them."""
    query = setup.to_query()
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def sidebar_summary(current: Lab) -> None:
    """The model every page works on. Each page draws it once (a training page from inside its
    live fragment, so the step count keeps up while playing)."""
    with st.sidebar:
        st.markdown("**Your model**")
        summary = current.summary()
        st.markdown("  \n".join(f"{k}: **{v}**" for k, v in summary.items()))
        if current.trainer.diverged_at is not None:
            st.markdown(f":red[{current.trainer.status}]")


def set_playing(lab: Lab, playing: bool) -> None:
    lab.playing = playing


def training_controls(lab: Lab) -> None:
    """Buttons act in callbacks, before the page redraws, so each label shows the new state."""
    st.session_state.setdefault("target_steps", engine.TASKS[lab.setup.task].preset.steps)
    stopped = lab.trainer.diverged_at is not None
    play, step, reset, until = st.columns([1, 1, 1, 2], vertical_alignment="bottom")
    play.button(
        "Pause" if lab.playing else "Play", key="play", type="primary", width="stretch", disabled=stopped,
        icon=":material/pause:" if lab.playing else ":material/play_arrow:",
        on_click=set_playing, args=(lab, not lab.playing),  # what the button said, not a toggle
    )
    step.button(
        "Step", key="step", width="stretch", disabled=stopped, help="one training step",
        icon=":material/skip_next:", on_click=lab.step,
    )
    reset.button(
        "Reset", key="reset", width="stretch", help="fresh weights from the seed; history cleared",
        icon=":material/restart_alt:", on_click=lab.reset,
    )
    until.number_input(
        "Train up to step", min_value=1, max_value=1_000_000, step=100, key="target_steps", persist_state="session"
    )


def live(lab: Lab, draw) -> None:
    """A fragment that draws the sidebar summary and draw(lab) and, while playing, trains up to
    "Train up to step" between redraws."""

    def summary_and(lab: Lab) -> None:
        sidebar_summary(lab)
        draw(lab)

    live_training(lab, summary_and, "target_steps")


def live_training(trainee, draw, until_key: str, seconds: float = TRAIN_SECONDS) -> None:
    """A fragment that calls draw(trainee) and, while playing, trains for `seconds` up to
    st.session_state[until_key] between redraws. `trainee` is anything that trains like a Lab
    (a Comparison too): `playing`, `lock` and `train_for(seconds, until)`."""

    @st.fragment(run_every=TICK_SECONDS if trainee.playing else None)
    def tick() -> None:
        # Draw first, then train: the charts on screen are never left waiting (and greyed out)
        # while the next steps run; they show them on the next tick. The lock makes a training
        # loop still finishing in another thread complete its step before anything is read.
        with trainee.lock:
            draw(trainee)
        if trainee.playing:
            trainee.train_for(seconds, until=st.session_state[until_key])
            if not trainee.playing:  # reached the target or stopped: redraw the buttons, stop ticking
                st.rerun()

    tick()
