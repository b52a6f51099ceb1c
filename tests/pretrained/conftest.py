"""A shipped checkpoint is measured once, when it is built (its card); a test that measures it again (a
rebuild, a lab trained from its card: marked remeasures(name), and training) runs only when the
checkpoint's inputs differ from those its card records (tests/pretrained/inputs.py): else it is
deselected, and the run's summary says which and why. UNROLLED_REMEASURE=1 runs them all."""
import os

from tests.pretrained import inputs

EVERY = "UNROLLED_REMEASURE"
REPORT = "remeasured"  # the summary's lines, in config.workeroutput under xdist (tests/conftest.py prints them)
_said: list[str] = []


def pytest_collection_modifyitems(config, items):
    asked = {item: item.get_closest_marker("remeasures").args[0] for item in items
             if item.get_closest_marker("remeasures")}
    if not asked:
        return
    differ = {name: inputs.changed(name) for name in sorted(set(asked.values()))}
    lines = []
    for name, digests in differ.items():
        if digests:
            lines.append(f"{name}: its inputs differ from its card's (card {digests[0][:12]}, now {digests[1][:12]}): "
                         "re-measured")
        else:
            lines.append(f"{name}: its inputs are its card's (tests/pretrained/inputs.py): "
                         + ("re-measured all the same" if os.environ.get(EVERY) == "1"
                            else f"not re-measured ({EVERY}=1 re-measures it)"))
    if os.environ.get(EVERY) != "1":
        unchanged = [item for item, name in asked.items() if not differ[name]]
        if unchanged:
            config.hook.pytest_deselected(items=unchanged)
            items[:] = [item for item in items if item not in unchanged]
    if hasattr(config, "workeroutput"):
        config.workeroutput[REPORT] = lines
    else:
        _said[:] = lines


def pytest_terminal_summary(terminalreporter):
    if _said:
        terminalreporter.section("shipped checkpoints re-measured")
        for line in _said:
            terminalreporter.write_line(line)
