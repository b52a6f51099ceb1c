"""Play, Pause, Step and Reset, and the live fragment that trains between redraws."""
from __future__ import annotations

import time
from collections.abc import Callable

import streamlit as st
from streamlit.errors import StreamlitInvalidLayoutContextError

import engine
from app.session.comparison import RoundRobin
from app.session.lab import Lab
from app.session.link import MAX_TARGET_STEPS, preset_setup
from app.session.page_runs import wait_for_page_runs
from app.session.playback import Playback
from app.widgets import lesson_band, state
from app.widgets.corpus_needed import corpus_needed
from app.widgets.header import holds_its_lab, sidebar_summary, this_tab_only
from app.widgets.literal import literal
from app.widgets.open_model import open_button

TICK_SECONDS = 0.4  # how often a playing page asks to redraw
TRAIN_SECONDS = 0.3  # training time per tick at least
TRAIN_SHARE = 0.75  # of a tick, for training: drawing the Gradients page takes 0.4 s, and at a
# fixed 0.3 s of training its LSTM got 13-17% of its training rate (benchmarks/README section 8)
MAX_TRAIN_SECONDS = 0.8  # training per tick at most: the figures on screen are at most this far behind
# s of wall time between two yield points of a training loop: a click waits at most this beyond the
# step under way. Every step, the yield (9 us alone, reading session state) cost 15 sessions playing
# on one process a fifth of their training (40 against 50 steps/s, benchmarks/README section 12).
YIELD_EVERY = 0.02
PAGE_RUN_POLL = 0.05  # s: how often a training loop waiting for other sessions' page runs checks its own
PAGE_RUN_WAIT = 2.0  # s a training loop waits for them at most before its next step


def train_seconds(drawn: float, least: float = TRAIN_SECONDS) -> float:
    """Training time for a tick whose drawing took `drawn` s (both in the tick's CPU time):
    TRAIN_SHARE of the tick, but at least `least` and at most MAX_TRAIN_SECONDS."""
    return min(max(least, drawn * TRAIN_SHARE / (1 - TRAIN_SHARE)), max(least, MAX_TRAIN_SECONDS))


def set_playing(trainee: Playback, playing: bool) -> None:
    trainee.playing = playing


def round_robin_controls(trainee: RoundRobin, prefix: str, until_key: str, label: str, each: str) -> None:
    """Play/Pause, Step, Reset and "`label`" (the step every run trains up to) for runs trained in
    turns (`each`: what one run is, for the help texts); the buttons act in callbacks, before the
    page redraws, so each label shows the new state."""
    stopped = all(run.stopped for run in trainee.runs) or state.get(state.CLASS_PAUSED, False)
    play, step, reset, until = st.columns([1, 1, 1, 2], vertical_alignment="bottom")
    play.button("Pause" if trainee.playing else "Play", key=f"{prefix}_play", type="primary", width="stretch",
                disabled=stopped, icon=":material/pause:" if trainee.playing else ":material/play_arrow:",
                on_click=set_playing, args=(trainee, not trainee.playing))  # what the button said
    step.button("Step", key=f"{prefix}_step", width="stretch", disabled=stopped, icon=":material/skip_next:",
                help=f"one training step of every {each}, each then measured", on_click=trainee.step)
    reset.button("Reset", key=f"{prefix}_reset", width="stretch", icon=":material/restart_alt:",
                 help=f"fresh weights from the seed for every {each}; logs and timings cleared", on_click=trainee.reset,
                 disabled=state.get(state.CLASS_PAUSED, False))
    until.number_input(label, min_value=1, max_value=100_000, step=50, key=until_key, persist_state="session",
                       help=f"The {each}s take turns, one step each, so all stand within one step of each other.")


def round_robin_progress(trainee: RoundRobin, until: int, each: str) -> None:
    """How far runs trained in turns stand (`each`: "cell", "network", "run"), and the time to go."""
    progress(trainee, trainee.steps_done, until, f" for each {each}")


def progress(trainee: Playback, done: int, until: int, each: str = "") -> None:
    """Step `done` of `until` as a bar, and while playing the time left at the page's own pace."""
    to_go = trainee.seconds_to_go(until) if trainee.playing else None
    eta = f" · about {duration(to_go)} to go at this pace" if to_go else ""
    st.progress(min(1.0, done / until), text=f"step {done:,} of {until:,}{each}{eta}")


def duration(seconds: float) -> str:
    """"40 s", "3 min 5 s", "1 h 20 min": a wait read at a glance."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def stopped_runs(trainee: RoundRobin) -> None:
    """A message for each run in turns that diverged: where it stopped and why."""
    for run in trainee.stopped():
        st.error(f"**The run {run.name} {run.trainer.status}**: its loss or gradient became infinite or NaN, so "
                 "that step was not applied and it stopped there.", icon=":material/local_fire_department:")


def training_controls(lab: Lab) -> None:
    """Buttons act in callbacks, before the page redraws, so each label shows the new state. A model
    opened before its task's corpus is on this machine has none: what it needs, and how to get it."""
    missing = lab.corpus_missing
    if missing is not None:
        corpus_needed(missing, "Training this model, and scoring it on held-out data, need it; the model is "
                               "open and reads what you type without it.", "controls")
        return
    st.session_state.setdefault(state.TARGET_STEPS, engine.TASKS[lab.setup.task].preset.steps)
    state.carry_over(state.TARGET_STEPS)  # the box is on several pages
    if not lab.trainable:
        st.info(f"This shipped model reads what you type and is scored on held-out data here, but does not train: "
                f"{literal(lab.too_big)}. It was trained once, when it was built (its card on Home says how). To "
                f"train a model of this task live, open its preset.", icon=":material/lock:")
        task = lab.setup.task
        open_button(lab, f"Open the {task} preset to train", preset_setup(task), engine.TASKS[task].preset.steps,
                    "open_preset", width="content", help="a fresh model of the preset's size, in place of this one")
        return
    paused = state.get(state.CLASS_PAUSED, False)  # by the teacher: every control waits (class_link.held_still)
    stopped = lab.trainer.diverged_at is not None or paused
    play, step, reset, until = st.columns([1, 1, 1, 2], vertical_alignment="bottom")
    play.button(
        "Pause" if lab.playing else "Play", key="play", type="primary", width="stretch", disabled=stopped,
        icon=":material/pause:" if lab.playing else ":material/play_arrow:",
        on_click=this_tab_only(set_playing), args=(lab, not lab.playing),  # what the button said, not a toggle
    )
    step.button(
        "Step", key="step", width="stretch", disabled=stopped, help="one training step",
        icon=":material/skip_next:", on_click=this_tab_only(lab.step),
    )
    reset.button(
        "Reset", key="reset", width="stretch", help="fresh weights from the seed; history cleared",
        icon=":material/restart_alt:", on_click=this_tab_only(lab.reset), disabled=paused,
    )
    until.number_input(
        "Train up to step", min_value=1, max_value=MAX_TARGET_STEPS, step=100, key=state.TARGET_STEPS,
        persist_state="session",
    )


def live(lab: Lab, draw: Callable[[Lab], None]) -> None:
    """A fragment that draws the sidebar summary and draw(lab) and, while playing, trains up to
    "Train up to step" between redraws. A model that waits for its corpus (training_controls says
    which) has nothing to train or to open up on yet: the summary alone."""
    if lab.corpus_missing is not None:
        sidebar_summary(lab)
        return

    def summary_and(lab: Lab) -> None:
        if not holds_its_lab():  # another tab took the lab: its whole-page run lets it go and says so
            st.rerun()
        try:
            sidebar_summary(lab)
        except StreamlitInvalidLayoutContextError:
            # A tick the browser sent just after a whole-page run that was cut short (a control moved
            # again) before it reached this fragment: Streamlit refuses the sidebar, written from outside
            # the fragment's own container, until a whole-page run has written it. The next whole-page
            # run does; without this the tick showed an error. Seen with 3-10 sessions playing at once
            # (benchmarks/load.py).
            pass
        if lab.trainable:  # a shipped model that does not train here has no step to go to
            progress(lab, lab.trainer.steps_done, state.target_steps())
        lesson_band.for_lab(lab)  # the open lesson's measured runs, behind this one (nothing otherwise)
        draw(lab)

    live_training(lab, summary_and, state.TARGET_STEPS)


def live_training(trainee: Playback, draw: Callable, until_key: str, seconds: float = TRAIN_SECONDS) -> None:
    """A fragment that calls draw(trainee) and, while playing, trains up to
    st.session_state[until_key] after each of its own runs (its ticks): at least `seconds`, and
    three times as long as the drawing took, up to MAX_TRAIN_SECONDS (train_seconds). A whole-page
    run (a control moved, Play pressed) only draws: it answers in the time a paused page takes,
    and the next tick trains.

    Paused, the page has no fragment: the same drawing in a plain container, where the fragment
    would put it. The browser keeps sending the fragment's ticks (its run_every timer) until the
    whole-page run that paused reaches it, and Streamlit runs each tick of a fragment the session
    still has; for a fragment it no longer has, it drops the request unrun (AppSession.request_rerun).
    With a fragment kept when paused, every tick sent after Pause redrew the figures: with 15
    sessions pausing together on one process those redraws held the interpreter lock so that the
    server's event loop, which delivers every message, ran once every 2-3 s; the Pause's own page
    run waited behind them, the browsers kept ticking, and no session saw its Pause answered in
    60 s (benchmarks/README section 12)."""
    if not trainee.playing:
        trainee.pace.restart()  # the time a page stands paused is not its pace
        with st.container(), trainee.lock:
            timed_draw(trainee, draw)
        return
    whole_page = [True]  # this call draws the fragment inline, as part of the whole page

    @st.fragment(run_every=TICK_SECONDS)
    def tick() -> None:
        # Draw first, then train: the charts on screen are never left waiting (and greyed out)
        # while the next steps run; they show them on the next tick. The lock makes a training
        # loop still finishing in another thread complete its step before anything is read.
        # Both measured in this thread's CPU time: with N sessions playing, each thread runs about
        # 1/N of the time, and wall-clock budgets let drawing (fixed CPU work) crowd training out
        # as N grew (benchmarks/README, section 12).
        state.tab_alive()  # a tick runs only while its tab asks for it (the class board's heartbeat)
        with trainee.lock:
            trainee.pace.mark(trainee.steps_taken)
            trainee.ticking = not whole_page[0]
            try:
                drawn = timed_draw(trainee, draw)
            finally:
                trainee.ticking = False
        if trainee.playing and not whole_page[0]:
            trainee.train_for(train_seconds(drawn, seconds), until=st.session_state[until_key],
                              between_steps=yield_to_the_page(), clock=time.thread_time)
            if not trainee.playing:  # reached the target or stopped: redraw the buttons, stop ticking
                st.rerun()

    tick()
    # Streamlit keeps this closure and calls it again for each of the fragment's own runs (its
    # run_every ticks), until the next whole-page run defines the fragment anew.
    whole_page[0] = False


def timed_draw(trainee: Playback, draw: Callable) -> float:
    """draw(trainee), and the thread's CPU time it took, which the trainee is told (Playback.drawn)."""
    start = time.thread_time()
    draw(trainee)
    drawn = time.thread_time() - start
    trainee.drawn(drawn)
    return drawn


def yield_to_the_page(clock: Callable[[], float] = time.monotonic) -> Callable[[], None]:
    """What a tick's training calls between two steps. First Streamlit's yield point, at most every
    YIELD_EVERY s of `clock`: Streamlit ends a run at its calls when a whole-page run of the session
    waits (a control moved, Pause), so that run starts after the step under way instead of after the
    tick's remaining training (MAX_TRAIN_SECONDS of this thread's CPU time, which with 30 sessions
    playing is many seconds of a clock's); a Python training loop makes no Streamlit call of its own.
    Then, while another session's page is being built, it waits (page_runs.py): in slices of
    PAGE_RUN_POLL s, so that this session's own click still ends the tick at once, and for at most
    PAGE_RUN_WAIT s in all."""
    last = [-YIELD_EVERY]

    def streamlit_yield_now_and_then() -> None:
        if clock() - last[0] >= YIELD_EVERY:
            last[0] = clock()
            streamlit_yield()

    def between_steps() -> None:
        streamlit_yield_now_and_then()
        for _ in range(round(PAGE_RUN_WAIT / PAGE_RUN_POLL)):
            if wait_for_page_runs(PAGE_RUN_POLL):
                return
            streamlit_yield()

    return between_steps


def streamlit_yield() -> None:
    """A Streamlit call that draws nothing: where a run a click is waiting on ends (raises). Reading
    session state is one (an element cleared was a message to the browser a step)."""
    state.TAB in st.session_state  # noqa: B015 (the read is the call: SafeSessionState checks for a rerun)
