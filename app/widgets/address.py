"""A link too long for Streamlit, which then reads none of it: said, instead of a silent default.

Streamlit's server ignores a whole query string of over 1,000 parameters or 512 Ki characters
(streamlit/runtime/state/query_params.py, sanitize_query_string), so the page ran as if opened
with no link and said nothing. The server cannot tell; the browser can: it still has the address
it was opened with. A script in the page checks it against the same limits and, when they were
passed, opens the page again with one short parameter saying so (LINK_DROPPED), which the header
turns into a message.
"""
from __future__ import annotations

import json

LINK_DROPPED = "link_dropped"  # the query parameter: how many parameters the dropped link had
MAX_FIELDS = 1000  # Streamlit's CLIENT_STATE_QUERY_STRING_MAX_FIELDS, counted as it counts them
MAX_CHARACTERS = 512 * 1024  # Streamlit's CLIENT_STATE_QUERY_STRING_MAX_LENGTH


def check_script() -> str:
    """JavaScript: when the address this document was opened with had a query string Streamlit
    dropped, replace the page by the same path with ?link_dropped=<its parameter count>."""
    return f"""
const opened = new URL(performance.getEntriesByType("navigation")[0]?.name ?? location.href);
const query = opened.search.slice(1);
const fields = query ? query.split("&").length : 0;  // as Streamlit counts them
if (fields > {MAX_FIELDS} || query.length > {MAX_CHARACTERS}) {{
  location.replace(opened.pathname + "?" + {json.dumps(LINK_DROPPED)} + "=" + fields);
}}"""


def message(given: str) -> str:
    """What the header says for ?link_dropped=<count> (`given`: that count, as the link says it)."""
    count = int(given) if given.isdigit() and len(given) < 10 else None
    what = f"{count:,} parameters" if count is not None else "too many parameters"
    return (f"The link you opened held {what}: Streamlit reads no link of over {MAX_FIELDS:,} parameters or "
            f"{MAX_CHARACTERS // 1024:,} Ki characters, so none of its settings were used. A link of Unrolled "
            "holds about 25 (copy it again from the address bar of the tab that made it).")
