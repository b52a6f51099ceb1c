import os
from pathlib import Path

from pretrained import kernels

# The kernel path every figure the tests assert was measured on, set before torch is imported
# (pretrained/kernels.py: avx2 unless UNROLLED_KERNELS names another); the app servers the browser
# tests start inherit it.
kernels.pin()

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)  # small models: one thread is fastest and shares the machine well

# Public corpora (engine.datasets) come from the mirror of their published files that sits beside the
# project on this project's machines and in CI, ../shared/data, unless the caller named another (run_tests.sh
# and .ci/run set it the same way); the app servers the browser tests start inherit it. Nothing is downloaded.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if "UNROLLED_DATA_MIRROR" not in os.environ and SHARED_DATA.is_dir():
    os.environ["UNROLLED_DATA_MIRROR"] = str(SHARED_DATA)

BROWSER = Path(__file__).resolve().parent / "browser"
# The full tier's tests: they train the lessons and presets for real (minutes) or drive chromium.
FULL_ONLY = ("training", "browser")
TIER = "UNROLLED_TEST_TIER"  # "default" or "full", set by pytest_configure


def pytest_configure(config):
    """The tier, decided once by the process that reads the command line and inherited by the xdist
    workers, which are handed the test ids explicitly and cannot tell the default tier from a choice."""
    if not hasattr(config, "workerinput"):
        asked = config.getoption("--full") or config.option.markexpr or \
            config.args_source is not pytest.Config.ArgsSource.TESTPATHS
        os.environ[TIER] = "full" if asked else "default"


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="the full tier: the tests marked training or browser too (what CI runs, .ci/run)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the marks into the tests' ids
def pytest_collection_modifyitems(config, items):
    # pytest-xdist (`--dist loadgroup`, pyproject.toml) runs the tests in two workers. The browser tests
    # share one app server and one chromium, so they run in one worker beside the rest, all but the
    # lessons played to their budgets on their pages (tests/browser/test_lesson_walk.py, marked
    # training): those go to whichever worker is free, as the other trainings do, and a worker starts
    # its own server and chromium for the first it takes. Tests sharing a training (functools.cache)
    # carry their own xdist_group mark, so it is trained once.
    for item in items:
        if item.path.resolve().is_relative_to(BROWSER):
            item.add_marker(pytest.mark.browser)
            if item.get_closest_marker("training") is None:
                item.add_marker(pytest.mark.xdist_group("browser"))
    # The default tier (./run_tests.sh alone): everything but the full tier's tests. Naming tests,
    # a -m expression or --full runs what is asked.
    if os.environ.get(TIER) == "default":
        full = [any(item.get_closest_marker(mark) for mark in FULL_ONLY) for item in items]
        kept = [item for item, only in zip(items, full) if not only]
        deselected = [item for item, only in zip(items, full) if only]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
    # The longest trainings first: a worker left alone with a long one at the end wastes the other.
    # items.sort is stable: every other test keeps its place, after them.
    if any(item.get_closest_marker("training") for item in items):
        items.sort(key=lambda item: -lesson_seconds(item))


def lesson_seconds(item) -> float:
    """How long the lesson a training test trains to its budget (in process or on its page) took to
    train when its ensemble was measured (app/data/ensembles: the median over its seeds on the first
    path, seconds); 0 for any other test. Only their order is used: a lesson's training is most of its
    test's time, in process (0.55-0.84 of these seconds for four lessons timed on an AMD EPYC) and on
    its page, where a tick trains three times as long as it draws."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or item.get_closest_marker("training") is None:
        return 0.0
    from app.session import ensembles
    from app.session.lessons import BY_KEY

    for value in callspec.params.values():
        key = getattr(value, "key", value)
        if isinstance(key, str) and key in BY_KEY and (ensemble := ensembles.shipped(key)) is not None:
            return ensemble.minutes() * 60
    return 0.0


_remeasured: list[str] = []  # what the workers' collections said of the shipped checkpoints' re-measures


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's: a worker has finished
def pytest_testnodedown(node, error):
    """Under xdist the workers collect, and tests/pretrained/conftest.py's report of which re-measures
    run reaches the summary through here."""
    for line in getattr(node, "workeroutput", {}).get("remeasured", []):
        if line not in _remeasured:
            _remeasured.append(line)


def pytest_terminal_summary(terminalreporter):
    if _remeasured:
        terminalreporter.section("shipped checkpoints re-measured")
        for line in _remeasured:
            terminalreporter.write_line(line)


def pytest_report_header(config):
    variables = ", ".join(f"{name}={value}" for name, value in kernels.PATHS[kernels.chosen()].items())
    return f"kernel path: {kernels.chosen()} ({variables})"
