"""Each lesson on its own page (issue 12, item 5): steps/s while playing in a real chromium, the
rerun after moving a control there, the time the lesson's budget takes at that pace beside what
its card promises, and the plain training rate of the same setup (Lab.advance in this process;
on a page that trains runs of its own, OWN_RUNS, their advance), so the table shows what share of
the training capacity the page delivers. Then one playing run of each lesson's live fragment (a
tick) under AppTest, in this process, split into training, recording, charts and the rest (where
a tick's time goes).

    PYTHONPATH=. python benchmarks/lesson_speed.py [--quick] [--only browser|profile] [--lessons KEY,KEY]
    # 30 s of play per lesson (--quick: 10 s); --lessons: those lessons' cases only (by LESSONS' keys)
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import torch
from app_server import serve
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from timing import load_average, table

from app import pages
from app.session import bert_gpt, pretrained, scaling, transfer, word_vectors
from app.session.comparison import CELLS, Comparison, RoundRobin, run_configs
from app.session.lab import Lab
from app.session.lessons import BY_KEY, LESSONS, Lesson, by_objective
from app.session.link import Setup
from app.session.probes import RECORD_EVERY
from app.session.transformers import CHAR_LM
from app.widgets import state

REPO = Path(__file__).resolve().parents[1]
MAIN = str(REPO / "app" / "main.py")
STEPS = re.compile(r"steps trained:\s*([\d,]+)")
# A page's progress text over its own runs, whatever it names a run (Compare cells: cell, start, ...).
EACH_RUN = re.compile(r"step ([\d,]+) of [\d,]+ for each \w+")
# A stated time in a card's text: "30 seconds", "2 minutes", "in 5 min", "90 s".
VIEWPORT = {"width": 1024, "height": 768}  # a projector's
STATED_TIME = re.compile(r"\b\d[\d,.]*\s*(?:seconds?|secs?|minutes?|mins?|s|hours?|h)\b", re.I)


@dataclasses.dataclass(frozen=True)
class OwnRuns:
    """A page that trains runs of its own in turns (a comparison.RoundRobin in st.session_state[key]),
    not the Lab's model: its progress reads "step N of M for each run", so count x N steps trained."""

    make: Callable[[Setup], RoundRobin]
    key: str
    control: str  # its "up to step" input
    count: int


# The pages that train their own runs; every other lesson's page trains the Lab.
def transfer_runs(setup: Setup) -> transfer.TransferRuns:
    """The Transfer learning page's runs of its lesson's recipe (the setup is the network they train)."""
    recipe = transfer.LESSON_RECIPE
    runs = transfer.TransferRuns(recipe, pretrained.load(pretrained.read(recipe.source))[0])
    assert runs.network == setup.model
    return runs


def vector_runs(setup: Setup) -> word_vectors.VectorRuns:
    """The Pretrained embeddings page's runs of its lesson's plan (the setup is the network they train)."""
    runs = word_vectors.VectorRuns(word_vectors.LESSON_PLAN, word_vectors.shipped_vectors())
    assert runs.network == setup.model
    return runs


def objective_runs(setup: Setup) -> bert_gpt.ObjectiveRuns:
    """The BERT and GPT page's runs of its lesson's plan (the setup is the masked run's)."""
    runs = bert_gpt.ObjectiveRuns(bert_gpt.LESSON_PLAN)
    assert bert_gpt.setup_of(runs.plan, bert_gpt.MASKED) == setup
    return runs


OWN_RUNS = {
    "scaling": OwnRuns(scaling.ScalingRuns, state.SCALING, "Train each up to step", len(scaling.RUNS)),
    "transfer": OwnRuns(transfer_runs, state.TRANSFER, "Train each up to step", 2),
    "word-vectors": OwnRuns(vector_runs, state.VECTORS, "Train each up to step", 3),
    "bert-gpt": OwnRuns(objective_runs, state.BERT, "Train each up to step", 2),
}


def own_runs(case: Case) -> OwnRuns | None:
    """The runs the lesson's page trains itself, if any: Compare cells' are of the lesson's kind."""
    if case.page == "compare":
        kind = case.lesson.compare_kind
        count = len(run_configs(kind, case.setup.model, tuple(CELLS)))
        return OwnRuns(functools.partial(Comparison, kind=kind), state.COMPARISON, "Steps for each run", count)
    return OWN_RUNS.get(case.page)


@dataclasses.dataclass(frozen=True)
class Case:
    """A lesson as its card opens it (via=None: click the card on Home), or the card's second half
    (via: the setup's link, opened in a fresh tab on the lesson's page)."""

    name: str
    lesson: Lesson | None  # None: a page's own offer (OFFERED), not a lesson
    setup: object
    page: str
    via: str | None = None
    target: int | None = None  # "Train up to step" when not a lesson's

    @property
    def steps(self) -> int:
        return self.lesson.steps if self.lesson is not None else self.target


# Self-attention's first offer, the page the "In front of a class" walk found slowest to pause (6-9 s).
OFFERED_CASE = Case("Self-attention, causal char LM", None, CHAR_LM, "self-attention",
                    via=f"self-attention?{urlencode({**CHAR_LM.to_query(), state.STEPS_PARAM: 1000})}", target=1000)


def cases() -> list[Case]:
    rows = [Case(lesson.key, lesson, lesson.setup, lesson.page) for lesson in LESSONS]

    def half(key: str, name: str, page: str, model=None, train=None) -> Case:
        lesson = BY_KEY[key]
        setup = dataclasses.replace(
            lesson.setup,
            model=dataclasses.replace(lesson.setup.model, **(model or {})),
            train=dataclasses.replace(lesson.setup.train, **(train or {})),
        )
        query = {**setup.to_query(), state.LESSON_PARAM: key}
        return Case(name, lesson, setup, page, via=f"{page}?{urlencode(query)}")

    # What the cards ask for next: "set the cell to LSTM ... and play again"; "turn clipping on at 1.0".
    rows += [
        OFFERED_CASE,
        half("rnn-forgets", "rnn-forgets, LSTM half", "build", model={"arch": "lstm"}),
        half("vanishing", "vanishing, LSTM half", "gradients", model={"arch": "lstm"}),
        half("exploding", "exploding, clipped at 1.0", "build", train={"clip_norm": 1.0}),
    ]
    return rows


def key_of(case: Case) -> str:
    """The lesson's key; a page's own offer goes by the page."""
    return case.lesson.key if case.lesson is not None else case.page


def chosen(keys: str) -> set[str]:
    """Lesson keys (or OFFERED_CASE's page) from "key1,key2" (argparse's type for --lessons)."""
    picked, known = set(keys.split(",")), [*BY_KEY, OFFERED_CASE.page]
    if picked - set(known):
        raise argparse.ArgumentTypeError(f"no lesson {', '.join(sorted(picked - set(known)))}; "
                                         f"the lessons: {', '.join(known)}")
    return picked


def budget(case: Case) -> int:
    """The steps the lesson's budget trains in all: each run's on a page training its own."""
    own = own_runs(case)
    return case.steps * (own.count if own else 1)


def stated_time(lesson: Lesson) -> str:
    found = STATED_TIME.findall(lesson.what_to_do)
    return "; ".join(found) if found else "none stated"


# --- The training capacity: Lab.advance (or the page's own runs' advance) in this process ------


FAR = 10**9  # an `until` no benchmark reaches


def plain_rate(case: Case, seconds: float) -> tuple[float, str]:
    """Steps/s of Lab(setup).advance() under the lab's lock, from a fresh lab, for at least `seconds`
    (what the page's training loop does, recording every 25 steps and the held-out evaluation
    included, with no drawing); on a page training its own runs, their advance (one step of one
    run, each run measured every 25 steps), counting every run's steps. Timed over whole rounds of
    25 steps (of each run), so every round's measurement is in: a slow setup's can take seconds.
    Training that stops (diverged) says at which step."""
    own = own_runs(case)
    trainee = Lab(case.setup) if own is None else own.make(case.setup)
    trainers = [trainee.trainer] if own is None else [run.trainer for run in trainee.runs]
    rounds = RECORD_EVERY * len(trainers)  # steps in which each run is measured once
    with trainee.lock:
        for _ in range(3):  # warm-up: the first steps allocate
            trainee.advance(FAR)
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds or done % rounds:
            if not trainee.advance(FAR):
                return float("nan"), "stops at " + ", ".join(f"step {t.steps_done} ({t.status})" for t in trainers)
            done += 1
        return done / (time.perf_counter() - start), ""


# --- The page in a real browser ---------------------------------------------------------------


@contextmanager
def server() -> Iterator[str]:
    """`streamlit run app/main.py` on a free port of 127.0.0.1 (app_server.serve), its address."""
    with serve() as app:
        yield app.url


class Runs:
    """Every script run the server reports to the tab, timestamped as its frames arrive: a list of
    (time, "start", fragment run or whole page) and (time, "end", the script_finished status).
    A run's end is the first end after its start, whatever its status: Streamlit rewrites a
    finished run's status to FINISHED_EARLY_FOR_RERUN when the next run starts before it flushed."""

    def __init__(self, page):
        self.events: list[tuple[float, str, object]] = []
        page.on("websocket", self.opened)

    def opened(self, ws) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        def received(payload) -> None:
            if not isinstance(payload, (bytes, bytearray)):
                return
            message = ForwardMsg.FromString(bytes(payload))
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.events.append((time.perf_counter(), "start", bool(message.metadata.run.fragment_ids)))
            elif kind == "script_finished":
                self.events.append((time.perf_counter(), "end", message.script_finished))

        ws.on("framereceived", received)

    def runs(self) -> list[tuple[float, float | None, bool]]:
        """(start, end or None while running, fragment run) of every run, in order."""
        out: list[list] = []
        for t, what, value in self.events:
            if what == "start":
                out.append([t, None, value])
            elif out and out[-1][1] is None:
                out[-1][1] = t
        return [tuple(run) for run in out]

    def page_run_end(self, after: float) -> float | None:
        """When the first whole-page run started after `after` ended (None: not yet)."""
        pages_runs = [(start, end) for start, end, fragment in self.runs() if start > after and not fragment]
        return pages_runs[0][1] if pages_runs else None

    def tick_ended(self, after: float) -> bool:
        return any(end is not None and end > after for start, end, fragment in self.runs() if fragment)

    def ticks(self, start: float, stop: float) -> tuple[int, float]:
        """Fragment runs (ticks) started in [start, stop], and the median length of those that ended."""
        inside = [(a, b) for a, b, fragment in self.runs() if fragment and start <= a <= stop]
        lengths = [b - a for a, b in inside if b is not None]
        return len(inside), statistics.median(lengths) if lengths else float("nan")


def steps_trained(page, case: Case) -> int:
    """The sidebar's "steps trained: N" (tests/browser/test_build_train.py reads it the same way); on
    a page training its own runs, count x N of its "step N of M for each run". -1: not shown."""
    own = own_runs(case)
    where, pattern = ("stSidebar", STEPS) if own is None else ("stMain", EACH_RUN)
    match = pattern.search(page.locator(f'[data-testid="{where}"]').inner_text())
    return (1 if own is None else own.count) * int(match.group(1).replace(",", "")) if match else -1


def playing(page) -> bool:
    return page.get_by_role("button", name="Pause", exact=True).count() > 0


def pump(page, until: float) -> None:
    """Let the tab's events (websocket frames) be handled promptly until perf_counter() reaches `until`."""
    while time.perf_counter() < until:
        page.wait_for_timeout(min(50, max(1, int((until - time.perf_counter()) * 1000))))


def control(case: Case) -> tuple[str, list[str]]:
    """The control a rerun moves on the lesson's page, and the values it is set to in turn."""
    if case.page in ("gradients", "gates"):
        return "Sample to open up", ["1", "0", "1", "0"]  # back where it started: the next round changes it again
    own = own_runs(case)
    label = "Train up to step" if own is None else own.control
    return label, [str(case.steps + 100), str(case.steps)] * 2


LOST_AFTER = 30.0  # s: a change that started no whole-page run by then is reported as lost (nan)


def reruns(page, runs: Runs, case: Case) -> list[float]:
    """Seconds from committing a new value of the page's control to the end of the whole-page run
    it starts (not a fragment run: a playing page's ticks go on meanwhile)."""
    label, values = control(case)
    box = page.get_by_label(label, exact=True)
    times = []
    for value in values:
        box.fill(value)
        began = time.perf_counter()
        box.press("Enter")
        deadline = began + LOST_AFTER
        while runs.page_run_end(began) is None and time.perf_counter() < deadline:
            page.wait_for_timeout(20)
        end = runs.page_run_end(began)
        times.append(float("nan") if end is None else end - began)  # nan: the change started no page run
        page.wait_for_timeout(300)
    return times


def open_case(page, url: str, case: Case) -> None:
    from tests.browser.conftest import wait_for_app

    if case.via is None:
        page.goto(url)
        wait_for_app(page)
        home_order = [lesson.key for _, group in by_objective() for lesson in group]  # Home groups them
        page.get_by_role("button", name="Open this lesson").nth(home_order.index(case.lesson.key)).click()
    else:
        page.goto(f"{url}/{case.via}")
    page.wait_for_url(re.compile(rf"/{case.page}\b"), timeout=60_000)
    wait_for_app(page)


def on_page(browser, url: str, case: Case, play_seconds: float) -> dict:
    """Open the case's page in a fresh tab, press Play, let it play for `play_seconds`, and time the
    reruns after moving its control while playing and after Pause."""
    from tests.browser.conftest import SCRIPT_TIMEOUT

    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(SCRIPT_TIMEOUT)
    try:
        page = context.new_page()
        runs = Runs(page)
        open_case(page, url, case)
        before = steps_trained(page, case)
        page.get_by_role("button", name="Play", exact=True).click()
        pressed = time.perf_counter()
        while not playing(page) and runs.page_run_end(pressed) is None and time.perf_counter() - pressed < 60:
            page.wait_for_timeout(20)  # the page's run after the click has drawn the Pause button
        while not runs.tick_ended(pressed) and playing(page) and time.perf_counter() - pressed < 60:
            page.wait_for_timeout(20)  # the first tick has drawn and trained
        t0, s0 = time.perf_counter(), steps_trained(page, case)
        samples = [(t0, s0)]
        stop = t0 + play_seconds
        while time.perf_counter() < stop and playing(page):
            pump(page, min(stop, time.perf_counter() + 1.0))
            samples.append((time.perf_counter(), steps_trained(page, case)))
        # A lesson that reached its target stopped meanwhile: its pace ends at the first reading
        # of its last step count, not at the last reading.
        t1, s1 = next(sample for sample in samples if sample[1] == samples[-1][1])
        ticks, tick_len = runs.ticks(t0, t1)
        still = playing(page)
        out = {"start steps": before, "steps": s1 - s0, "seconds": t1 - t0, "rate": (s1 - s0) / max(t1 - t0, 1e-9),
               "ticks": ticks, "tick s": tick_len, "played on": still, "end steps": s1}
        kept = [sample for sample in samples if sample[0] <= t1]
        half = len(kept) // 2
        if half and len(kept) > 2:  # the pace in the window's first and second half
            (ta, sa), (tb, sb), (tc, sc) = kept[0], kept[half], kept[-1]
            out["halves"] = ((sb - sa) / (tb - ta), (sc - sb) / (tc - tb))
        out["rerun playing"] = reruns(page, runs, case) if still else []
        if playing(page):
            pump(page, time.perf_counter() + 3.0)  # the last rerun's renewal drawn: a tick as any other
        if playing(page):  # not at its target meanwhile
            out["pause"] = pause(page, case)
        settled(page)
        out["rerun paused"] = reruns(page, runs, case)
        return out
    finally:
        context.close()


def pause(page, case: Case) -> tuple[float, int | None]:
    """Click Pause: seconds until the button reads Play again, and the steps trained beyond those the
    page showed at the click (a tick shows its steps before it trains more, so up to two ticks' worth:
    the one on screen and the one under way)."""
    shown = steps_trained(page, case)
    try:
        page.get_by_role("button", name="Pause", exact=True).click(timeout=5_000)
    except PlaywrightTimeout:  # the target reached between the look and the click: nothing to pause
        return float("nan"), None
    clicked = time.perf_counter()
    play_button = page.get_by_role("button", name="Play", exact=True)
    while play_button.count() == 0 and time.perf_counter() - clicked < LOST_AFTER:
        page.wait_for_timeout(10)
    answered = time.perf_counter() - clicked if play_button.count() else float("nan")
    settled(page)
    return answered, steps_trained(page, case) - shown


def settled(page) -> None:
    """Under load a tick or the Pause's run may still be going after the first settle."""
    from tests.browser.conftest import wait_for_app

    for attempt in range(3):
        try:
            wait_for_app(page)
            return
        except AssertionError:
            if attempt == 2:
                raise


def rerun_cell(times: list[float]) -> str:
    """The median rerun, and how many changes started none (lost)."""
    done = [t for t in times if t == t]
    if not times:
        return "-"
    lost = len(times) - len(done)
    return (f"{statistics.median(done):.2f}" if done else "none") + (f" ({lost} of {len(times)} lost)" if lost else "")


def minutes(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds / 60:.1f} min"


def browser_table(picked: list[Case], play_seconds: float, capacity_seconds: float) -> str:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS

    if not os.access(CHROMIUM, os.X_OK):
        return f"### Lessons on their pages\n\nskipped: {CHROMIUM} is missing (apt-get install chromium)\n"
    rows = []
    with server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for case in picked:
                plain, stopped = plain_rate(case, capacity_seconds)  # the server idles meanwhile
                got = on_page(browser, url, case, play_seconds)
                rate = got["rate"] if got["steps"] > 0 else float("nan")
                note = "" if got["played on"] else f" (stopped at step {got['end steps']})"
                shown = "-" if rate != rate else f"{rate:.1f}"
                halves = " / ".join(f"{h:.1f}" for h in got.get("halves", ())) or "-"
                label, _ = control(case)
                playing_rerun, paused_rerun = (rerun_cell(got["rerun playing"]), rerun_cell(got["rerun paused"]))
                answered, beyond = got.get("pause", (float("nan"), None))
                per_tick = got["steps"] / got["ticks"] if got["ticks"] else float("nan")
                rows.append([
                    case.name + ("" if case.via is None else " (by link)"), case.page,
                    f"{shown}{note}", halves, f"{plain:.1f}" if plain == plain else stopped,
                    f"{rate / plain:.0%}" if rate == rate and plain == plain else "-",
                    f"{got['ticks'] / got['seconds']:.2f}" if got["seconds"] > 0 else "-", f"{got['tick s']:.2f}",
                    label, playing_rerun, paused_rerun,
                    "-" if answered != answered else f"{answered:.2f}",
                    "-" if beyond is None else f"{beyond:,} ({per_tick:.0f})",
                    f"{budget(case):,}", minutes(budget(case) / rate), minutes(budget(case) / plain),
                    stated_time(case.lesson) if case.lesson else "none stated",
                ])
                print(f"  {case.name}: {rate:.1f} steps/s on the page, {plain:.1f} plain "
                      f"(load {load_average()})", file=sys.stderr, flush=True)
        finally:
            browser.close()
    return table(
        f"Lessons on their pages: one chromium tab ({VIEWPORT['width']}x{VIEWPORT['height']}), {play_seconds:.0f} s "
        "of play each, against "
        f"Lab.advance in this process ({capacity_seconds:.0f} s each; on a page training its own runs, their "
        "advance, every run's steps counted)",
        ["lesson", "page", "steps/s on the page", "first / second half", "steps/s Lab.advance (capacity)",
         "page / capacity", "ticks/s", "tick s (median)", "control moved", "rerun s, playing", "rerun s, paused",
         "Pause answered, s", "steps after the Pause shown (one tick's)",
         "budget (steps)", "budget at the page's pace", "budget at capacity", "time the card states"],
        rows,
    )


# --- Where a tick's time goes: one playing run under AppTest, in this process -------------------


FIGURES = "building figures (app.charts)"


class Split:
    """Wall time spent in the outermost call of each category's functions while patched in."""

    def __init__(self):
        self.spent: dict[str, float] = {}
        self.depth: dict[str, int] = {}
        self.patched: list[tuple[object, str, object]] = []
        self.by_figure: dict[str, float] = {}  # seconds in each app.charts function (outermost calls)
        self.calls: list[str] = []

    def wrap(self, owner, name: str, category: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            outer = self.depth.get(category, 0) == 0
            if outer and category == FIGURES:
                self.calls.append(name)
            self.depth[category] = self.depth.get(category, 0) + 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.depth[category] -= 1
                if outer:
                    self.spent[category] = self.spent.get(category, 0.0) + time.perf_counter() - start
                    if category == FIGURES:
                        self.by_figure[name] = self.by_figure.get(name, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)
        self.patched.append((owner, name, original))

    def undo(self) -> None:
        for owner, name, original in reversed(self.patched):
            setattr(owner, name, original)


def categorised(split: Split) -> None:
    import importlib
    import inspect
    import pkgutil

    import engine
    from app import charts
    from app.session import heldout, playback, probes
    from app.widgets import figures

    split.wrap(playback.Playback, "train_for", "training (train_for)")
    split.wrap(engine.Trainer, "step", "of which optimizer steps")
    split.wrap(probes.Probes, "measure", "of which gradient log (every 25)")
    split.wrap(heldout.HeldOut, "trained", "of which held-out eval (every 25)")
    split.wrap(scaling.SaturationRun, "measure", "of which held-out eval and engine.saturation (own runs, every 25)")
    for name in ("recording", "truncated_recording", "weight_spectra", "initial_gradients"):
        split.wrap(probes.Probes, name, "recording for the figures")
    split.wrap(probes.Probes, "log_frame", "gradient log to a frame")
    split.wrap(engine.Trainer, "history_frame", "history to a frame")
    for found in pkgutil.iter_modules(charts.__path__):  # every figure module, each page's among them
        module = importlib.import_module(f"{charts.__name__}.{found.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and not name.startswith("_"):
                split.wrap(module, name, FIGURES)
    split.wrap(figures, "show", "st.plotly_chart (serialise the figure)")


def profile_case(case: Case, runs: int) -> dict[str, float]:
    """A session with the case's setup on its page, playing: a few ticks to warm up, then `runs`
    timed ticks, runs of the live fragment alone as its run_every timer asks for them (each: its
    drawing and its training; a whole-page run trains nothing). Seconds per tick by category;
    "total" the whole tick."""
    from streamlit.testing.v1 import AppTest

    from tests.app.test_page_reruns import tick

    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    if case.via is None:
        at.button(key=f"lesson.{case.lesson.key}").click().run()
    else:
        at.session_state[state.LAB].start(case.setup)
        at.session_state[state.TARGET_STEPS] = case.steps
    split = Split()
    categorised(split)  # before the page's run: the fragment's draw keeps the functions its page imported then
    try:
        at.switch_page(pages.PATHS[case.page]).run()
        assert not at.exception, [e.value for e in at.exception]
        own = own_runs(case)
        trainee = at.session_state[state.LAB if own is None else own.key]
        trainee.playing = True
        at.run()  # a playing page's whole run: a paused page has no live fragment to tick
        for _ in range(2):
            tick(at)
        split.spent.clear()  # the page's run and the warm-up ticks: not timed
        split.by_figure.clear()
        start = time.perf_counter()
        for _ in range(runs):
            trainee.playing = True  # a lesson that reaches its target stops playing
            drawn = tick(at)
        total = (time.perf_counter() - start) / runs
    finally:
        split.undo()
    assert not drawn.exception, [e.value for e in drawn.exception]
    slowest = sorted(split.by_figure.items(), key=lambda item: -item[1])[:3]
    return {"total": total, **{k: v / runs for k, v in split.spent.items()},
            "slowest": ", ".join(f"{name} {seconds / runs * 1000:.0f} ms" for name, seconds in slowest)}


CATEGORIES = ["training (train_for)", "of which optimizer steps", "of which gradient log (every 25)",
              "of which held-out eval (every 25)", "of which held-out eval and engine.saturation (own runs, every 25)",
              "recording for the figures", "gradient log to a frame", "history to a frame",
              "building figures (app.charts)", "st.plotly_chart (serialise the figure)"]


def profile_table(picked: list[Case], runs: int) -> str:
    rows = []
    for case in picked:
        if case.name == "exploding":
            continue  # diverges on its second step: nothing plays
        spent = profile_case(case, runs)
        named = sum(spent.get(c, 0.0) for c in CATEGORIES if not c.startswith("of which"))
        rows.append([case.name, case.page, spent["total"], *(spent.get(c, 0.0) for c in CATEGORIES),
                     spent["total"] - named, f"{spent.get(CATEGORIES[0], 0.0) / spent['total']:.0%}",
                     spent["slowest"]])
    return table(
        f"Where a playing page's tick goes (AppTest in this process, mean of {runs} ticks of its live fragment), s",
        ["case", "page", "tick", *CATEGORIES, "the rest (Streamlit, widgets, page code)", "training's share",
         "slowest figures (per run)"],
        rows,
    )


def run(quick: bool, only: str | None = None, lessons: set[str] | None = None) -> str:
    """Both tables (or `only` one) for every case, or the cases of `lessons` (keys)."""
    torch.set_num_threads(1)
    picked = [case for case in cases() if lessons is None or key_of(case) in lessons]
    play, capacity = (10.0, 2.0) if quick else (30.0, 5.0)
    tables = {"browser": lambda: browser_table(picked, play, capacity),
              "profile": lambda: profile_table(picked, 2 if quick else 4)}
    return "\n".join(make() for name, make in tables.items() if only in (None, name))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10 s of play per lesson instead of 30")
    parser.add_argument("--only", choices=["browser", "profile"], help="one of the two tables")
    parser.add_argument("--lessons", type=chosen, metavar="KEY,KEY",
                        help="these lessons' cases only (their second halves included), by LESSONS' keys")
    args = parser.parse_args()
    print(run(args.quick, args.only, args.lessons))


if __name__ == "__main__":
    main()
