"""The layers of DESIGN.md hold: the engine, the session and the figure builders import no
Streamlit (so they are tested and used without a browser), and no page or session module writes a
bare session-state key (every key is named in app/widgets/state.py)."""
import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NO_STREAMLIT = sorted([*REPO.glob("engine/**/*.py"), *REPO.glob("app/session/*.py"), *REPO.glob("app/charts/*.py")])
# every module that uses Streamlit, but state.py, where the keys are named
PAGES_AND_WIDGETS = sorted(p for p in REPO.glob("app/**/*.py") if p.name != "state.py" and "streamlit" in p.read_text())


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


@pytest.mark.parametrize("path", NO_STREAMLIT, ids=lambda p: str(p.relative_to(REPO)))
def test_no_streamlit_below_the_widgets(path):
    assert not any(name.split(".")[0] == "streamlit" for name in imported_modules(path))


def test_the_layers_are_all_there():
    assert len([p for p in NO_STREAMLIT if p.parts[-2] == "charts"]) >= 8
    assert len([p for p in NO_STREAMLIT if p.parts[-2] == "session"]) >= 6
    assert len(PAGES_AND_WIDGETS) >= 12  # main, pages, 6 pages, header, controls, parts, form, downloads


# st.session_state["..."] / .get("...") / .pop("...") / .setdefault("..."): a key written as a string
BARE_KEY = re.compile(r"session_state(\[\s*f?[\"']|\.(get|pop|setdefault)\(\s*f?[\"'])")


@pytest.mark.parametrize("path", PAGES_AND_WIDGETS, ids=lambda p: str(p.relative_to(REPO)))
def test_no_bare_session_state_keys(path):
    bare = [line.strip() for line in path.read_text().splitlines() if BARE_KEY.search(line)]
    assert not bare, bare
