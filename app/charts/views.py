"""The one cache of what pages work out to draw: a figure, a figure's laid-out frame, a table.

Each is kept by (source, view, choices): `source` is the object it is worked out from (a
recording, which never changes once made; a trainer or a lab's probes, which train on, so the
caller says which `version` of it the value shows: its steps), `view` names what is drawn, and
`choices` are the page's settings it depends on (a stack, a unit, a head). A rerun that moved
nothing the figure shows gets it back as it was; going back to a sample finds its figures made.

A source's values live as long as the source (dropped when it is freed, so a new model's
figures never meet an old one's: two objects alive at once never share an id) and at most
PER_SOURCE of them, the least recently used dropped first: a student sweeping a unit slider
through 1,024 units keeps the latest 64. Sources belong to one session (its lab, its
recordings), so no session ever reads another's values through this cache.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import TypeVar

from cachetools import LRUCache

PER_SOURCE = 64  # values kept per source: the views a page draws of one recording, with room to go back
T = TypeVar("T")

# A page's run, its live fragment's tick and a download's thread may all read. Reentrant: a value
# freed under it may be the last hold on a source, whose _forget takes it.
_lock = threading.RLock()
_by_source: dict[int, tuple[weakref.ref, LRUCache]] = {}  # id(source) -> (source, its values)


def view(source: object, name: str, choices: tuple, build: Callable[[], T], version: Hashable = ()) -> T:
    """build(), made once per source, name, choices and version; built outside the lock (two
    threads may both build a value the first time: the same value, one kept)."""
    key = (name, choices)
    with _lock:
        values = _values_of(source)
        held = values.get(key)
    if held is not None and held[0] == version:
        return held[1]
    value = build()
    with _lock:
        _values_of(source)[key] = (version, value)
    return value


def _values_of(source: object) -> LRUCache:
    """The source's values, made empty the first time it is seen (the caller holds the lock)."""
    held = _by_source.get(id(source))
    if held is None or held[0]() is not source:
        held = (weakref.ref(source), LRUCache(maxsize=PER_SOURCE))
        _by_source[id(source)] = held
        weakref.finalize(source, _forget, id(source), held[0])
    return held[1]


def _forget(source_id: int, ref: weakref.ref) -> None:
    """The source was freed: its values go with it (unless its id already holds a newer source's)."""
    with _lock:
        if _by_source.get(source_id, (None,))[0] is ref:
            del _by_source[source_id]


def sources_held() -> int:
    """How many sources have values kept now (for tests: a freed source keeps none)."""
    with _lock:
        return len(_by_source)
