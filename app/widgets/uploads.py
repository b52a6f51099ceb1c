"""Files students upload for a task, read once for the whole server.

Parsing an IMDB-size review CSV takes seconds; the parsed reviews are immutable (read-only
arrays), so every session that uploads the same file shares one copy, keyed by the file's bytes.
Models are never shared: each session builds its own task and model from this data.
"""
from __future__ import annotations

import streamlit as st

from engine.tasks import ParsedReviews, parse_reviews

PARSED_FILES = 8  # distinct uploads kept parsed at once (an IMDB-size CSV parses to ~40 MB)


@st.cache_resource(max_entries=PARSED_FILES, show_spinner="Reading the reviews…")
def parsed_reviews(data: bytes) -> ParsedReviews:
    return parse_reviews(data)


def describe(upload: bytes | str | ParsedReviews) -> str:
    """What a lab's uploaded file holds, in a few words: "1,000 reviews", "52,410 characters"."""
    if isinstance(upload, ParsedReviews):
        return f"{len(upload):,} reviews"
    return f"{len(upload):,} {'bytes' if isinstance(upload, bytes) else 'characters'}"


def task_data(upload_param: str | None, data: bytes | None) -> bytes | ParsedReviews | None:
    """What the task takes for the uploaded file: a review CSV parsed (shared), a text as it is.
    Raises ValueError, saying what is wrong with the file, for a CSV that cannot be read."""
    if data is None or upload_param != "csv_text":
        return data
    return parsed_reviews(data)
