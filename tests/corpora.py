"""A machine with none of the public corpora (engine.datasets): an empty data cache of the test's own, no
mirror, and nothing left in this process of a corpus read before, for the tests of what works without them.

The data layer and the tasks keep what they read once a process (functools caches), so a test that ran
earlier in the same worker with the mirror would leave the corpora in memory: empty_machine clears those
caches before the test, and again after it (a cache filled meanwhile from a test's own download would
otherwise outlive the test's cache folder). A failed read is never cached, so nothing stale is left.
"""
from __future__ import annotations

from pathlib import Path

from engine import datasets, prose
from engine.tasks import masked_lm, sentiment, translate

# The mirror of the corpora's published files beside the project (../shared/data), for a test whose corpus arrives
MIRROR = Path(__file__).resolve().parents[2] / "shared" / "data"
# Every cache of what a corpus makes, in the engine: the corpus's bytes, and what the tasks parse of them.
ENGINE_CACHES = (datasets.corpus_bytes, prose.prose_words, masked_lm.prose_ids,
                 translate.kept_split, sentiment.shipped_sentences)


def app_caches() -> tuple:
    """The app's own caches of what the corpora make (imported here, not above: the engine's tests run without
    the app's modules), Streamlit's among them (a shipped model's vectors of the held-out prose)."""
    from app.session import bert_gpt, embeddings
    from app.widgets import word_contexts

    return embeddings.prose_corpus, bert_gpt.shipped_readers, word_contexts.shipped_bank


def clear(caches) -> None:
    for cached in caches:
        (cached.cache_clear if hasattr(cached, "cache_clear") else cached.clear)()


def empty_machine(tmp_path, monkeypatch, app: bool = False):
    """For a fixture to yield from: no corpus on this machine for the test's length, the empty cache folder
    yielded; with `app`, the app's caches of what the corpora make cleared too (AppTest's pages)."""
    caches = ENGINE_CACHES + (app_caches() if app else ())
    cache = tmp_path / "data-cache"
    monkeypatch.setenv(datasets.CACHE, str(cache))
    monkeypatch.delenv(datasets.MIRROR, raising=False)
    clear(caches)
    yield cache
    clear(caches)
