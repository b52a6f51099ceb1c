"""Public data, got rather than kept: the corpora the tasks read are cut from public files found on this
machine (the cache, then a mirror folder) and downloaded only when a user asks.

    from engine import datasets
    text = datasets.corpus_text("shakespeare")     # CorpusMissing (a ValueError) if its files are not here
    datasets.fetch(["shakespeare"])                 # download, check by sha256, cache

    python -m engine.datasets list                  # what is on this machine
    python -m engine.datasets fetch [NAME ...]      # download (sizes, licences, a progress bar)
    python -m engine.datasets fetch --from DIR      # copy from a folder, for a machine with no network

registry.py says where each file comes from, cuts.py how each corpus is made of them, store.py where a
file is looked for and how it is fetched.
"""
from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path

from . import store
from .registry import CORPORA, FILES, Corpus, PublicFile, files_of
from .store import CACHE, MIRROR, DigestMismatch, NotWritable, cache_dir, mirror_dir

__all__ = ["CORPORA", "FILES", "Corpus", "PublicFile", "CorpusMissing", "DigestMismatch", "NotWritable",
           "corpus_bytes", "corpus_text", "available", "missing_files", "fetch", "fetch_command", "megabytes",
           "cache_dir", "mirror_dir", "CACHE", "MIRROR"]


class CorpusMissing(ValueError):
    """A corpus whose public files are not on this machine. A ValueError, so every path that shows a bad
    setting's message shows this one; pages that can offer a download catch it by name."""

    def __init__(self, corpus: Corpus, absent: list[PublicFile], refused: str = ""):
        self.corpus, self.absent = corpus, absent
        super().__init__(
            (f"{refused}. " if refused else "")
            + f"{corpus.title} ({megabytes(sum(f.size for f in absent))} to download) is not on this machine: "
            f"it is needed for {corpus.needed_by}. Source: {sources(absent)}; licence: {corpus.licence}. "
            f"Download it with `{fetch_command([corpus.name])}` (or, with no network, copy the files with "
            f"`{fetch_command([corpus.name])} --from FOLDER`)")


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def sources(files: Iterable[PublicFile]) -> str:
    repositories = dict.fromkeys(f"{f.repository} @ {f.commit[:12]}" for f in files)
    return ", ".join(repositories)


def fetch_command(names: Iterable[str] = ()) -> str:
    return " ".join(["python -m engine.datasets fetch", *names])


def missing_files(name: str) -> list[PublicFile]:
    """The corpus's public files that are neither in the cache nor in the mirror."""
    return [f for f in files_of([name]) if store.locate(f) is None]


def available(name: str) -> bool:
    return not missing_files(name)


@functools.cache
def corpus_bytes(name: str) -> bytes:
    """The corpus `name` cut from its files, checked by digest at both ends; made once a process (it never
    changes), CorpusMissing when a file is not here (and tried again at the next call: nothing is kept
    of a failure)."""
    corpus = CORPORA[name]
    found: dict[str, bytes] = {}
    for file in files_of([name]):
        path = store.locate(file)
        if path is None:
            raise CorpusMissing(corpus, missing_files(name))
        try:
            found[file.path] = store.read_checked(file, path)
        except FileNotFoundError:  # deleted since it was located
            raise CorpusMissing(corpus, missing_files(name) or [file]) from None
        except DigestMismatch as refused:  # a copy of the right size, other bytes: a download replaces it
            raise CorpusMissing(corpus, [file], refused=str(refused)) from None
    data = corpus.cut(found)
    made = hashlib.sha256(data).hexdigest()
    if made != corpus.sha256:  # the files were checked, so the cut's code changed: say so, use nothing
        raise ValueError(f"the cut of {name} has sha256 {made}, not the recorded {corpus.sha256}: "
                         "engine/datasets/cuts.py changed without its registry entry")
    return data


def corpus_text(name: str) -> str:
    """The corpus as text (UTF-8, no newline translation)."""
    return corpus_bytes(name).decode("utf-8")


def fetch(names: Iterable[str] | None = None, source: Path | None = None,
          progress: Callable[[PublicFile, int, int], None] | None = None) -> list[Path]:
    """Every file the named corpora (all, given None) need that is not here yet: copied from `source`, a
    folder, if given, else downloaded from its pinned address; each checked by sha256 and cached. Returns
    where each file now is. DigestMismatch, NotWritable, OSError or urllib's URLError say what failed;
    what was fetched before the failure stays."""
    places = []
    for file in files_of(list(CORPORA) if names is None else list(names)):
        place = store.checked_place(file)  # a copy of other bytes is fetched again
        if place is None:
            report = None if progress is None else functools.partial(progress, file)
            place = store.copy_from(file, source) if source is not None else store.download(file, report)
        places.append(place)
    return places
