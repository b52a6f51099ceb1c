"""The teacher's link, http://host:8500/board#code=CODE: a one-time code after "#", where no server or log
keeps it (a query string reaches nginx's error log when an app process fails), spent by the first board it
opens (app/session/teacher_pass.py). The teacher key itself is typed on the board, never put in an address.

A fragment is never sent to a server. A script in the board page reads it, puts the code in a cookie that
lives a minute at most, and replaces the tab's address with the board's bare path, so the tab's history
entry that held it is gone (chromium's profile keeps it in its History database all the same: hence a code
that works once). That new load sends the cookie with the websocket's handshake (st.context.cookies), where
the board reads it once per session; its script, finding no fragment, deletes the cookie. Streamlit's router
rewrites the address before a page's script runs (location.hash is empty by then), but the navigation entry
keeps the address the tab was opened with, fragment and all (address.py reads it the same way).

The session the code admits gets a pass in a session cookie (gone when the browser closes), which opens the
board again on a reload without a code or the key.
"""
from __future__ import annotations

import json
import re

import streamlit as st

from app.widgets import state

COOKIE = "unrolled_teacher_code"
PASS_COOKIE = "unrolled_teacher_pass"
COOKIE_SECONDS = 60  # the reload sends it at once; one left behind (the tab closed first) dies soon
# What a code may be to travel in the fragment (teacher_pass.CODE): none of its characters ends a cookie or
# needs escaping. Checked before the cookie is written, so a crafted link cannot add attributes to it.
CODE_PATTERN = "^[0-9]{1,12}[.][A-Za-z0-9_-]{16}[.][A-Za-z0-9_-]{22}$"
PASS_PATTERN = "^[0-9]{1,12}[.][A-Za-z0-9_-]{16}[.][A-Za-z0-9_-]{22}$"  # teacher_pass.PASS
OLD_PARAM = "key"  # ?key=KEY, the link before the key moved after "#"
OLD_LINK = ("Links to the board with `?key=` are not used any more, so this one's key was not checked: a query "
            "string is kept by the browser's history and can reach a server's log. Open the link "
            "deploy/serve_class.py prints, whose key comes after `#`, or type the key.")


def move_code_script() -> str:
    """JavaScript: the navigation entry's #code=... into the cookie, then the board's bare path in place
    of the entry that held it (an old link's #key=... too, never written anywhere); on a load without
    either, the cookie deleted (the server read it with the handshake).

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
const fragment = new URLSearchParams(opened.hash.slice(1));
const given = fragment.get("code") ?? (fragment.has("key") ? "" : null);
if (given === null) {{
  document.cookie = {cookie} + "; path=/; SameSite=Strict; max-age=0";
}} else {{
  if (new RegExp({json.dumps(CODE_PATTERN)}).test(given)) {{
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


def move_code_to_cookie() -> None:
    """The script, in the sidebar, on every run of the board (the page keeps the same elements)."""
    st.sidebar.html(f"<script>{move_code_script()}</script>", unsafe_allow_javascript=True)


def keep_pass(teacher_pass: str) -> None:
    """The teacher's pass into a session cookie, from a script in the sidebar, on every run once admitted."""
    if re.fullmatch(PASS_PATTERN.strip("^$"), teacher_pass) is None:  # made by teacher_pass.new_pass: never
        raise ValueError("a teacher's pass out of shape")
    cookie = json.dumps(f"{PASS_COOKIE}={teacher_pass}; path=/; SameSite=Strict")
    st.sidebar.html(f"<script>document.cookie = {cookie};</script>", unsafe_allow_javascript=True)


def pass_given() -> str | None:
    """The pass this browser's cookie holds, if any (checked by the caller: teacher_pass.pass_holds)."""
    return st.context.cookies.get(PASS_COOKIE)


def take_old_link() -> bool:
    """Whether the address held ?key=; it is taken out, unread, before the header reads the address
    as a lab's link."""
    if OLD_PARAM not in st.query_params:
        return False
    del st.query_params[OLD_PARAM]
    return True


def cookie_code_once() -> str | None:
    """The code the cookie brought, on this session's first look only: a rerun of the page must not
    count another try against the browser's limit (class_config.check_code)."""
    if st.session_state.get(state.TEACHER_COOKIE_TRIED):
        return None
    st.session_state[state.TEACHER_COOKIE_TRIED] = True
    return st.context.cookies.get(COOKIE)
