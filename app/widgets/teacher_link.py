"""The teacher's link, http://host:8500/board#key=KEY: the class's key after "#", where no server,
log or history keeps it (a query string reaches nginx's error log when an app process fails, and
stays in the tab's history).

A fragment is never sent to a server. A script in the board page reads it, puts the key in a cookie
that lives a minute at most, and replaces the tab's address with the board's bare path, so the
history entry that held the key is gone. That new load sends the cookie with the websocket's
handshake (st.context.cookies), where the board reads it once per session; its script, finding no
fragment, deletes the cookie. Streamlit's router rewrites the address before a page's script runs
(location.hash is empty by then), but the navigation entry keeps the address the tab was opened
with, fragment and all (address.py reads it the same way).
"""
from __future__ import annotations

import json

import streamlit as st

from app.widgets import state

COOKIE = "unrolled_teacher_key"
COOKIE_SECONDS = 60  # the reload sends it at once; one left behind (the tab closed first) dies soon
# The characters a key may have to travel in the fragment: a URL's unreserved ones, none of which
# ends a cookie or needs escaping (serve_class.py's keys are base64url). Checked before the cookie is
# written, so a crafted link cannot add attributes to it.
KEY_PATTERN = "^[A-Za-z0-9._~-]{1,256}$"
OLD_PARAM = "key"  # ?key=KEY, the link before the key moved after "#"
OLD_LINK = ("Links to the board with `?key=` are not used any more, so this one's key was not checked: a query "
            "string is kept by the browser's history and can reach a server's log. Open the link "
            "deploy/serve_class.py prints, whose key comes after `#`, or type the key.")


def move_key_script() -> str:
    """JavaScript: the navigation entry's #key=... into the cookie, then the board's bare path in place
    of the entry that held it; on a load without it, the cookie deleted (the server read it with the
    handshake).

    By the time this runs, the page's first run may have pushed the lab's link (header.write_link)
    over the entry with the key, so replacing the current entry would leave the key one step back:
    the Navigation API finds that entry and goes back to it first (a browser without the API keeps
    it). The current address is set to the bare path before the reload either way, as the reload's
    referrer must not be the lab's link: address.py would follow it to a third load, without the
    cookie this load deletes."""
    cookie = json.dumps(f"{COOKIE}=")
    attributes = json.dumps(f"; path=/; SameSite=Strict; max-age={COOKIE_SECONDS}")
    return f"""{{
const opened = new URL(performance.getEntriesByType("navigation")[0]?.name ?? location.href);
const given = new URLSearchParams(opened.hash.slice(1)).get("key");
if (given === null) {{
  document.cookie = {cookie} + "; path=/; SameSite=Strict; max-age=0";
}} else {{
  if (new RegExp({json.dumps(KEY_PATTERN)}).test(given)) {{
    document.cookie = {cookie} + given + {attributes};
  }}
  const board = () => {{
    history.replaceState(null, "", opened.pathname);
    location.replace(opened.pathname);
  }};
  const held = window.navigation?.entries().find(entry => entry.url === opened.href);
  if (held !== undefined && held.key !== window.navigation.currentEntry.key) {{
    window.navigation.traverseTo(held.key).committed.then(board, board);
  }} else {{
    board();
  }}
}}
}}"""


def move_key_to_cookie() -> None:
    """The script, in the sidebar, on every run of the board (the page keeps the same elements)."""
    st.sidebar.html(f"<script>{move_key_script()}</script>", unsafe_allow_javascript=True)


def take_old_link() -> bool:
    """Whether the address held ?key=; it is taken out, unread, before the header reads the address
    as a lab's link."""
    if OLD_PARAM not in st.query_params:
        return False
    del st.query_params[OLD_PARAM]
    return True


def cookie_key_once() -> str | None:
    """The key the cookie brought, on this session's first look only: a rerun of the page must not
    count another try against the browser's limit (class_config.check_key)."""
    if st.session_state.get(state.TEACHER_COOKIE_TRIED):
        return None
    st.session_state[state.TEACHER_COOKIE_TRIED] = True
    return st.context.cookies.get(COOKIE)
