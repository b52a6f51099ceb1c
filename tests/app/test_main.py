"""The app starts and its home page renders without an exception."""
from pathlib import Path

from streamlit.testing.v1 import AppTest

import engine

MAIN = str(Path(__file__).resolve().parents[2] / "app" / "main.py")


def test_home_page_renders_every_task_lesson():
    at = AppTest.from_file(MAIN, default_timeout=60).run()
    assert not at.exception
    assert at.title[0].value == "Unrolled"
    text = "\n".join(m.value for m in at.markdown)
    for name, task in engine.TASKS.items():
        assert f"**{name}** ({task.preset.model.arch.upper()}" in text
        assert task.preset.lesson in text
