"""One outbound check, made when each connection opens: every address form, every client."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from host.bounded_http import bounded_call
from host.outbound import OutboundRefused, check_outbound_url, shared_http_client


def _bounded():
    return bounded_call(total_seconds=10, max_bytes=1_000_000)


METADATA = [
    "http://169.254.169.254/",
    "http://[::ffff:169.254.169.254]/",  # IPv4-mapped
    "http://[::169.254.169.254]/",  # IPv4-compatible
    "http://[64:ff9b::a9fe:a9fe]/",  # NAT64, well-known prefix
    "http://[64:ff9b:1::a9fe:a9fe]/",  # NAT64, local-use prefix
    "http://[2002:a9fe:a9fe::]/",  # 6to4
    "http://[2001:0:a9fe:a9fe::56ff:fff7]/",  # Teredo, relay at 169.254.169.254
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",  # Teredo, client in a test range
    "http://[fe80::1]/",  # link-local
    "http://[fd00::1]/",  # unique-local
    "http://[ff02::1]/",  # multicast
    "http://[::]/",  # unspecified
    "http://0.0.0.0/",
    "http://10.0.0.5/",
]
LOOPBACK = [
    "http://127.0.0.1/",
    "http://[::1]/",
    "http://[::127.0.0.1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[64:ff9b::7f00:1]/",
    "http://[2002:7f00:1::]/",
]
PUBLIC = [
    "http://8.8.8.8/",
    "http://[2606:4700:4700::1111]/",
    "http://[64:ff9b::808:808]/",  # NAT64 to a public address
    "http://[2002:808:808::]/",  # 6to4 of a public address
]


@pytest.mark.parametrize("url", METADATA)
@pytest.mark.parametrize("allow_loopback", [True, False], ids=["ai-profile", "webhook"])
def test_internal_addresses_are_refused_in_every_form(url, allow_loopback):
    with pytest.raises(OutboundRefused, match="private or internal"):
        check_outbound_url(url, allow_loopback=allow_loopback)


@pytest.mark.parametrize("url", LOOPBACK)
def test_loopback_in_every_form_follows_the_loopback_rule(url):
    check_outbound_url(url, allow_loopback=True)
    with pytest.raises(OutboundRefused, match="loopback"):
        check_outbound_url(url, allow_loopback=False)


@pytest.mark.parametrize("url", PUBLIC)
def test_public_addresses_pass_in_every_form(url):
    check_outbound_url(url, allow_loopback=False)


class _Counting(BaseHTTPRequestHandler):
    hits: list[str]
    redirect_to = ""

    def do_GET(self) -> None:
        self.hits.append(self.path)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", self.redirect_to)
        else:
            self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server():
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    server.hits = hits
    server.handler = handler
    yield server
    server.shutdown()
    server.server_close()


def test_the_webhook_client_refuses_loopback_when_it_connects(local_server, settings):
    settings.OUTBOUND_ALLOW_LOOPBACK = True  # AI profiles may; webhooks still may not
    with _bounded(), pytest.raises(OutboundRefused, match="loopback"):
        shared_http_client(allow_loopback=False).get(f"{local_server.base_url}/hook")
    assert local_server.hits == []


def test_the_rules_of_the_moment_apply_when_a_connection_opens(local_server, settings):
    """One client serves the model calls, embeddings, probes and Qdrant's transport."""
    port = local_server.server_address[1]
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    with _bounded():
        assert shared_http_client().get(f"http://localhost:{port}/ok").status_code == 200
    settings.OUTBOUND_ALLOW_LOOPBACK = False
    # Another origin, so a new connection: refused before it opens.
    with _bounded(), pytest.raises(OutboundRefused, match="loopback"):
        shared_http_client().get(f"http://127.0.0.1:{port}/later")
    assert local_server.hits == ["/ok"]


def test_a_redirect_to_an_internal_address_is_refused(local_server, settings):
    """A client that follows redirects gains nothing: the hop is checked like the first."""
    settings.OUTBOUND_ALLOW_LOOPBACK = True
    local_server.handler.redirect_to = "http://[::ffff:169.254.169.254]/latest/meta-data/"
    with _bounded(), pytest.raises(OutboundRefused, match="private or internal"):
        shared_http_client().get(f"{local_server.base_url}/redirect", follow_redirects=True)
    assert local_server.hits == ["/redirect"]
