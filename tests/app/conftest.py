from pathlib import Path

import pytest

from app.widgets.header import lab_store
from app.widgets.state import window_key

APP = Path(__file__).resolve().parents[2] / "app"
MAIN = str(APP / "main.py")


@pytest.fixture(autouse=True)
def empty_lab_store():
    """Every test here starts from an empty lab store. The store is one a process (functools.cache),
    as on a server, so it kept every lab the worker's earlier AppTests made: after 240 of them it
    was full, and the next lab a test made evicted the oldest lab of the browser holding the most,
    which was that test's own (tests/app/test_tabs.py lost the lab it was about to take back, issue 42)."""
    lab_store.cache_clear()
    yield
    lab_store.cache_clear()  # nor does it leave its labs to the next: their weights are freed with it


def plotted(values) -> list:
    """A trace's x or y as plotted: plotly's JSON stores numeric arrays as typed base64."""
    import base64

    import numpy as np

    if isinstance(values, dict) and "bdata" in values:
        array = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
        shape = values.get("shape")
        if isinstance(shape, str):  # a 2-D array's shape travels as "rows, columns"
            shape = [int(n) for n in shape.split(",")]
        return array.reshape(shape).tolist() if shape else array.tolist()
    return list(values)


def chart(at, title: str) -> dict:
    """The plotly figure on the page whose title contains `title`, as its JSON spec."""
    import json

    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    def text(spec: dict) -> str:  # a title in a column breaks into lines (widgets/figures.show)
        return spec["layout"].get("title", {}).get("text", "").replace("<br>", " ")

    found = [s for s in specs if title in text(s)]
    assert len(found) == 1, [s["layout"].get("title", {}).get("text") for s in specs]
    return found[0]


def shown(markdown: str) -> str:
    """A message's Markdown as the browser shows it: app/widgets/literal.py's escapes and zero-width
    spaces taken out again."""
    import re

    from app.widgets.literal import ACTIVE, ZERO_WIDTH_SPACE

    return re.sub(r"\\" + ACTIVE.pattern, r"\1", markdown).replace(ZERO_WIDTH_SPACE, "")


def shown_window(at) -> int:
    """The truncation window the Gradients page shows (its look_window): the model's own, else the
    slider's, a quarter of the sequence until it moves."""
    lab = at.session_state["lab"]
    T = lab.recording(0).seq_len
    looked = at.session_state[window_key(T)] if window_key(T) in at.session_state else max(1, T // 4)
    return lab.setup.train.bptt_window or looked
