"""Files students upload for a task, read once for the whole server.

Parsing an IMDB-size review CSV takes seconds, streamed within a stated bound on memory (about
1.3 bytes a byte of the file at its peak: engine/tasks/review_csv.py); the parsed reviews are
immutable (read-only arrays), so every session that uploads the same file shares one copy, keyed
by the file's bytes.
Models are never shared: each session builds its own task and model from this data.
"""
from __future__ import annotations

import numpy as np
import streamlit as st

from engine.tasks import ParsedReviews, parse_reviews

PARSED_FILES = 8  # distinct uploads kept parsed at once (an IMDB-size CSV parses to 53 MB: ParsedReviews.nbytes)


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


def longer_read(reviews: ParsedReviews, seq_len: int) -> int | None:
    """The sequence length that reads 90% of the reviews whole, when the current one cuts more than
    half of them (None: it does not)."""
    words = np.diff(reviews.starts)  # [N]
    if (words > seq_len).mean() <= 0.5:
        return None
    return int(np.ceil(np.percentile(words, 90)))


def lengths_text(reviews: ParsedReviews, seq_len: int) -> str:
    """How long the reviews run in words against the words a model reads (its last seq_len): a
    median IMDB review runs about 170 words, so a sequence length fit for the shipped reviews
    reads only the end of one."""
    words = np.diff(reviews.starts)  # [N]
    median, most = np.median(words), np.percentile(words, 90)
    cut = (words > seq_len).mean()
    return (f"Your reviews run to a median of {median:,.0f} words (90% have {most:,.0f} or fewer); the network "
            f"reads the last {seq_len:,} of each, so {cut:.0%} of them are cut.")
