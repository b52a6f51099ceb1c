"""The scripts that build engine/data/'s corpora, loaded as modules for the tests (scripts/ is no
package), and the figures their provenance notes record."""
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def load(name: str):
    """scripts/<name>.py as a module. The shared corpus_files is registered under the name the
    scripts import it by (a script run from the shell finds it beside itself)."""
    if name != "corpus_files" and "corpus_files" not in sys.modules:
        sys.modules["corpus_files"] = load("corpus_files")
    path = SCRIPTS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def script(corpus: str):
    """scripts/build_<corpus>_corpus.py as a module."""
    return load(f"build_{corpus}_corpus")


def recorded(note: Path, pattern: str) -> str:
    """The first group of `pattern` in a provenance note."""
    return re.search(pattern, note.read_text(encoding="utf-8")).group(1)


def figure(note: Path, pattern: str) -> int:
    """A whole number the note records, thousands separated by commas."""
    return int(recorded(note, pattern).replace(",", ""))
