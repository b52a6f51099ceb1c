"""Which address a session came from (app/widgets/network.py): the last X-Forwarded-For entry when the
connection is nginx's on loopback, the connection's own address otherwise."""
from types import SimpleNamespace

import pytest
import streamlit

from app.widgets.network import UNKNOWN, client_address


@pytest.mark.parametrize(("direct", "forwarded", "found"), [
    ("127.0.0.1", "10.0.0.7", "10.0.0.7"),  # behind serve_class.py's nginx
    ("127.0.0.1", "6.6.6.6, 10.0.0.7", "10.0.0.7"),  # a browser's own header comes first; nginx's entry is last
    ("::1", "2001:db8::5", "2001:db8::5"),
    ("127.0.0.1", "", "127.0.0.1"),  # a browser on the server itself
    ("127.0.0.1", "not-an-address", "127.0.0.1"),
    ("10.0.0.8", "6.6.6.6", "10.0.0.8"),  # no nginx in between: the header is the browser's word, unread
    (None, "6.6.6.6", UNKNOWN),
])
def test_the_address_is_nginxs_entry_only_behind_nginx(monkeypatch, direct, forwarded, found):
    monkeypatch.delenv("UNROLLED_TRUSTED_PROXIES", raising=False)
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    monkeypatch.setattr(streamlit, "context", SimpleNamespace(ip_address=direct, headers=headers))
    assert client_address() == found


def test_a_proxy_on_another_machine_is_trusted_when_named(monkeypatch):
    """serve_class.py --no-proxy --trusted-proxy ADDRESS: the proxy's machine connects from ADDRESS, and every
    student would otherwise be that one address (the whole class sharing one address's limits)."""
    monkeypatch.setattr(streamlit, "context", SimpleNamespace(ip_address="10.0.0.11",
                                                              headers={"X-Forwarded-For": "10.0.0.57"}))
    monkeypatch.delenv("UNROLLED_TRUSTED_PROXIES", raising=False)
    assert client_address() == "10.0.0.11"
    monkeypatch.setenv("UNROLLED_TRUSTED_PROXIES", "10.0.0.12, 10.0.0.11")
    assert client_address() == "10.0.0.57"
