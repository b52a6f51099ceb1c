"""The network address a session came from, for limits counted per address (the teacher key's wrong tries).

Streamlit gives the address of the connection (st.context.ip_address). Behind deploy/serve_class.py's nginx
that is nginx's own address, and the browser's is the last entry of X-Forwarded-For, the one nginx appended (a
browser may send the header itself, and its own entries come first). nginx on this machine connects from
loopback; an nginx on another machine of the class (serve_class.py --backend) from an address named in
UNROLLED_TRUSTED_PROXIES (comma-separated), which serve_class.py --trusted-proxy sets. A connection from anywhere
else never had nginx in between, so its header is the browser's word and is not read.
"""
from __future__ import annotations

import ipaddress
import os

import streamlit as st

UNKNOWN = "unknown"  # no address given (a test's session): counted as one address
TRUSTED_PROXIES = "UNROLLED_TRUSTED_PROXIES"


def from_proxy(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    trusted = {part.strip() for part in os.environ.get(TRUSTED_PROXIES, "").split(",") if part.strip()}
    return address.is_loopback or str(address) in trusted


def client_address() -> str:
    direct = st.context.ip_address
    if direct is None:
        return UNKNOWN
    try:
        proxied = from_proxy(ipaddress.ip_address(direct))
    except ValueError:
        return UNKNOWN
    forwarded = (st.context.headers.get("X-Forwarded-For") or "").rsplit(",", 1)[-1].strip() if proxied else ""
    try:
        return str(ipaddress.ip_address(forwarded)) if forwarded else direct
    except ValueError:  # not an address: nginx writes none such, so it is not nginx's entry
        return direct
