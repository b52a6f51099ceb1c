"""The suite in a shuffled order, to find a test that depends on what ran before it in its worker (issue 42):

    ./run_tests.sh -p tests.shuffle --shuffle-seed 4                      every test anywhere
    ./run_tests.sh -p tests.shuffle --shuffle-seed 5 --shuffle-by-module  the modules shuffled, and each
                                                                          module's tests among themselves

The second keeps a module's tests together, so its module-scoped fixtures are shared in a new order (a test
that changes one shows there); the first mixes every module's use of the process's stores, and sets a
module's fixtures up again for most of its tests. Only the order changes: unlike pytest-randomly, no
generator (random, numpy, torch) is reseeded, so every test sees what it sees in the usual order.

Under xdist each worker runs its share in the shuffled order, as the scheduler hands it out. With
--shuffle-log DIR each worker writes the node ids it ran, in order, to DIR/<worker>.txt (DIR/main.txt
without xdist). To run a failure again after the same tests, keep that file's lines up to it and give
them to pytest as a file of arguments, which runs them in its order:

    ./run_tests.sh -n 0 @before-the-failure.txt
"""
from __future__ import annotations

import os
import random
from pathlib import Path

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("shuffle", "a shuffled order (tests/shuffle.py)")
    group.addoption("--shuffle-seed", type=int, default=None, help="shuffle the collected tests with this seed")
    group.addoption("--shuffle-by-module", action="store_true",
                    help="shuffle the modules, and each module's tests among themselves, keeping them together")
    group.addoption("--shuffle-log", default=None, metavar="DIR",
                    help="write the node ids each worker ran, in order, to DIR/<worker>.txt")


@pytest.hookimpl(trylast=True)  # after tests/conftest.py has chosen the tier's tests
def pytest_collection_modifyitems(config, items):
    seed = config.getoption("--shuffle-seed")
    if seed is None:
        return
    draw = random.Random(seed)  # every xdist worker draws the same order: xdist requires their collections agree
    if config.getoption("--shuffle-by-module"):
        modules: dict[str, list] = {}
        for item in items:
            modules.setdefault(item.nodeid.split("::")[0], []).append(item)
        groups = list(modules.values())
        draw.shuffle(groups)
        for group in groups:
            draw.shuffle(group)
        items[:] = [item for group in groups for item in group]
    else:
        draw.shuffle(items)


def pytest_report_header(config):
    seed = config.getoption("--shuffle-seed")
    if seed is not None:
        return f"shuffled order: seed {seed}{', by module' if config.getoption('--shuffle-by-module') else ''}"


class OrderLog:
    """Appends each test's node id to `path` as it ends: the order this process ran them in."""

    def __init__(self, path: Path):
        self.path = path

    def pytest_runtest_logfinish(self, nodeid, location):
        with self.path.open("a") as log:
            log.write(nodeid + "\n")


def pytest_sessionstart(session):
    folder = session.config.getoption("--shuffle-log")
    # xdist's controller (its "dsession" plugin) runs no test: it is handed its workers' reports, which
    # would write every worker's ids into one file
    if folder is None or session.config.pluginmanager.has_plugin("dsession"):
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    session.config.pluginmanager.register(OrderLog(Path(folder) / f"{worker}.txt"), "shuffle-order-log")
