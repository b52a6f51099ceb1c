"""What a user typed or named, shown as the characters it is.

Streamlit renders the text of st.error, st.warning, st.info and st.markdown as Markdown (with
LaTeX between dollars and :colour[...] directives). A link key, an uploaded file's name or a
value echoed inside one of the app's messages could otherwise become a clickable link, an image
every visitor's browser fetches from outside, or a wall of text: so every such piece is escaped
(a backslash before each character that makes Markdown link, fetch or render something, which it
then shows as the character itself; an invisible zero-width space where a bare URL or e-mail address
would be linked anyway; one line) and cut to a length a message can hold.
"""
from __future__ import annotations

import re

# What makes Markdown fetch, link, run or restyle: links and images need "[", HTML "<", code "`",
# LaTeX "$", emphasis "*" and "_" ("__proto__" showed as a bold "proto"), strike-through "~",
# Streamlit's :colour[...] directives and :emoji: short codes ":" (a ":red" prefix disappeared). A
# backslash escapes each (and itself); Markdown shows the character itself, so "num_heads" reads
# as typed.
ACTIVE = re.compile(r"([\\`\[\]<>$*_~:])")
AUTOLINKED = re.compile(r"(?i)(?<=[a-z])(?=://)|(?<=www)(?=\.)|(?=@)")
ZERO_WIDTH_SPACE = "\u200b"
LONGEST = 300  # characters of one echoed piece: a 100 KB link key is not echoed whole


def literal(text: object, longest: int = LONGEST) -> str:
    """str(text) on one line, cut to `longest` characters (the cut said), never linked, ACTIVE escaped."""
    text = str(text)
    if len(text) > longest:
        text = f"{text[:longest]}… ({len(text):,} characters, cut)"
    one_line = " ".join(text.splitlines())  # a line of its own could start a heading, a list or a quote
    return ACTIVE.sub(r"\\\1", AUTOLINKED.sub(ZERO_WIDTH_SPACE, one_line))
