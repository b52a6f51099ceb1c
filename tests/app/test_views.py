"""The one cache of what pages work out (app/charts/views.py): kept per source, name, choices and
version, gone with its source, and bounded per source."""
from __future__ import annotations

import gc

from app.charts import views


class Source:
    """Anything a page draws from: a recording, a trainer, a lab's probes."""


def counted(calls: list, value):
    return lambda: calls.append(value) or value


def test_a_value_is_made_once_per_source_choices_and_version():
    source, other, calls = Source(), Source(), []
    assert views.view(source, "fig", (1,), counted(calls, "a")) == "a"
    assert views.view(source, "fig", (1,), counted(calls, "b")) == "a"  # kept
    assert views.view(source, "fig", (2,), counted(calls, "c")) == "c"  # another choice
    assert views.view(other, "fig", (1,), counted(calls, "d")) == "d"  # another source
    assert views.view(source, "fig", (1,), counted(calls, "e"), version=5) == "e"  # trained on
    assert views.view(source, "fig", (1,), counted(calls, "f"), version=5) == "e"
    assert calls == ["a", "c", "d", "e"]


def test_a_freed_source_takes_its_values_with_it_and_a_new_one_never_meets_them():
    """A new model's probes may be given the id of the old ones once those are freed: their
    figures must not be found."""
    gc.collect()
    before = views.sources_held()
    source = Source()
    views.view(source, "fig", (), lambda: "old")
    assert views.sources_held() == before + 1
    del source
    gc.collect()
    assert views.sources_held() == before
    reused = [Source() for _ in range(1000)]  # CPython gives a freed id out again soon
    assert all(views.view(s, "fig", (), lambda: "new") == "new" for s in reused)


def test_a_source_keeps_at_most_per_source_values_the_least_recently_used_dropped():
    source, calls = Source(), []
    for unit in range(views.PER_SOURCE + 1):  # a unit slider swept past the bound
        views.view(source, "unit", (unit,), counted(calls, unit))
    views.view(source, "unit", (views.PER_SOURCE,), counted(calls, "again"))  # the latest: kept
    views.view(source, "unit", (0,), counted(calls, "zero again"))  # the oldest: dropped, made again
    assert calls[-1] == "zero again" and "again" not in calls
