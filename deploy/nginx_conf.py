"""The nginx config for a class: deploy/nginx.conf.template with its @NAME@ fields filled from the
list of app processes (host:port, this machine's and other machines'). No nginx here."""
from __future__ import annotations

import re
import socket
from pathlib import Path

TEMPLATE = Path(__file__).with_name("nginx.conf.template")
INDENT = " " * 8
# What one address may hold and open (nginx.conf.template says why these sizes). A class of 60 behind one
# NAT, each with two tabs: 120 websockets and, while pages load, up to six requests a browser at once.
PER_ADDRESS = 600  # connections held at once
NEW_SESSIONS_BURST = 240  # websockets opened at once: every student's two tabs, reloaded together
NEW_SESSIONS_RATE = 5  # websockets a second after the burst: a class's reloads, never a script's flood


def resolve(backend: str) -> str:
    """'host:port' with the host as the IPv4 address nginx will connect to: nginx reports the
    address it used ($upstream_addr), and the cookie is read from that, so the two must match."""
    host, _, port = backend.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{backend!r} is not host:port")
    return f"{socket.gethostbyname(host)}:{int(port)}"


def pinned_group(index: int, addresses: list[str]) -> str:
    """Process `index` for the browsers it holds, the others as backups while it is down."""
    servers = [f"{INDENT}server {a};" if i == index else f"{INDENT}server {a} backup;" for i, a in enumerate(addresses)]
    return "\n".join([f"    upstream unrolled_{index} {{", *servers, "    }"])


def render(backends: list[str], listen: str, run_dir: Path, max_body_mb: int) -> str:
    """The config text. `backends` in a fixed order: a cookie holds a process's index in it."""
    addresses = [resolve(b) for b in backends]
    if len(set(addresses)) != len(addresses):
        raise ValueError(f"the same app process is listed twice: {', '.join(backends)}")
    fields = {
        "RUN_DIR": str(run_dir),
        "LISTEN": listen,
        "MAX_BODY_MB": str(max_body_mb),
        "PER_ADDRESS": str(PER_ADDRESS),
        "NEW_SESSIONS_BURST": str(NEW_SESSIONS_BURST),
        "NEW_SESSIONS_RATE": str(NEW_SESSIONS_RATE),
        "SERVERS_ANY": "\n".join(f"{INDENT}server {a};" for a in addresses),
        "SERVERS_PINNED": "\n".join(pinned_group(i, addresses) for i in range(len(addresses))),
        "COOKIE_TO_GROUP": "\n".join(f'{INDENT}"{i}" unrolled_{i};' for i in range(len(addresses))),
        # $upstream_addr lists every address tried ("a:1, b:2"); the last one answered.
        "ADDRESS_TO_INDEX": "\n".join(f'{INDENT}"~(^|\\s){re.escape(a)}$" {i};' for i, a in enumerate(addresses)),
    }
    text = TEMPLATE.read_text()
    for name, value in fields.items():
        text = text.replace(f"@{name}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    assert not left, f"fields left unfilled in {TEMPLATE.name}: {left}"
    return text
