"""What a user typed or named, shown as the characters it is.

Streamlit renders the text of st.error, st.warning, st.info and st.markdown as Markdown (with
LaTeX between dollars and :colour[...] directives). A link key, an uploaded file's name or a
value echoed inside one of the app's messages could otherwise become a clickable link, an image
every visitor's browser fetches from outside, or a wall of text: so every such piece is escaped
(a backslash before each ASCII punctuation mark, which Markdown then shows as the mark itself,
and an invisible zero-width space where a bare URL or e-mail address would be linked anyway) and
cut to a length a message can hold.
"""
from __future__ import annotations

import re

PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation mark, which CommonMark lets a backslash escape
# Where GitHub-flavoured Markdown makes a link of bare text, escapes or not: "http://", "www." and an
# e-mail's "@". A zero-width space there (invisible) keeps the text from being linked.
AUTOLINKED = re.compile(r"(?i)(?<=[a-z])(?=://)|(?<=www)(?=\.)|(?=@)")
ZERO_WIDTH_SPACE = "\u200b"
LONGEST = 300  # characters of one echoed piece: a 100 KB link key is not echoed whole


def literal(text: object, longest: int = LONGEST) -> str:
    """str(text) cut to `longest` characters (the cut said), never linked, every punctuation mark escaped."""
    text = str(text)
    if len(text) > longest:
        text = f"{text[:longest]}… ({len(text):,} characters, cut)"
    return PUNCTUATION.sub(r"\\\1", AUTOLINKED.sub(ZERO_WIDTH_SPACE, text))
