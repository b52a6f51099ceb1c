"""What the browser fixes in its address before the server reads it, in a script in the page.

Two things the server cannot see. Streamlit's server ignores a whole query string of over 1,000
parameters or 512 Ki characters (streamlit/runtime/state/query_params.py, sanitize_query_string),
so the page ran as if opened with no link and said nothing. And the menu's page links carry no
query string, so a page of the menu opened in a new tab (a middle-click) ran with no model named.
The browser still has the address it was opened with (the navigation entry) and, for a link
followed from the app, the page it came from (document.referrer, same origin: its whole address).
The script replaces the page by one the header can read: ?link_dropped=<parameters>.<characters>,
said as a message, or the address of the tab it came from, whose model the new tab then takes (one
tab drives a model: session/store.py). A bare address typed or bookmarked opens the defaults.
"""
from __future__ import annotations

import json
import re

LINK_DROPPED = "link_dropped"  # the query parameter: "<parameters>.<characters>" of the dropped link
MAX_FIELDS = 1000  # Streamlit's CLIENT_STATE_QUERY_STRING_MAX_FIELDS, counted as it counts them
MAX_CHARACTERS = 512 * 1024  # Streamlit's CLIENT_STATE_QUERY_STRING_MAX_LENGTH
COUNTS = re.compile(r"([0-9]{1,9})\.([0-9]{1,9})")  # what the script writes; anything else is not echoed


def check_script() -> str:
    """JavaScript, in a block of its own (run again in the same page, it declares nothing twice)."""
    return f"""{{
const opened = new URL(performance.getEntriesByType("navigation")[0]?.name ?? location.href);
const query = opened.search.slice(1);
const fields = query ? query.split("&").length : 0;  // as Streamlit counts them
if (fields > {MAX_FIELDS} || query.length > {MAX_CHARACTERS}) {{
  location.replace(opened.pathname + "?" + {json.dumps(LINK_DROPPED)} + "=" + fields + "." + query.length);
}} else if (!query && document.referrer) {{
  const from = new URL(document.referrer);
  if (from.origin === opened.origin && from.searchParams.has("lab")) {{
    location.replace(opened.pathname + from.search);
  }}
}}
}}"""


def message(given: str) -> str:
    """What the header says for ?link_dropped=<parameters>.<characters> (`given`, as the link says it)."""
    counts = COUNTS.fullmatch(given)
    what = (f"{int(counts[1]):,} parameters and {int(counts[2]):,} characters" if counts else
            "more parameters or characters than Streamlit reads")
    return (f"The link you opened held {what}: Streamlit reads no link of over {MAX_FIELDS:,} parameters or "
            f"{MAX_CHARACTERS // 1024:,} Ki characters, so none of its settings were used and Unrolled started "
            "with the defaults. A link of Unrolled holds about 25 settings (copy it again from the address bar of "
            "the tab that made it).")
