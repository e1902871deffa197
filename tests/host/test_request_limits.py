"""Request bodies are bounded at the door, over real HTTP against the live ASGI server.

Each refusal arrives while the body is still unfinished: Django spools a body to disk
only once all of it is in, so an answer before the end proves nothing was spooled.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
import uvicorn
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.test import Client

from host.web import uvicorn_command
from knowledge.models import Source
from knowledge.services import store_create
from tests.conftest import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def _connect(live_asgi_server) -> socket.socket:
    parts = urlsplit(live_asgi_server.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


@pytest.fixture
def spooled(monkeypatch) -> list[int]:
    """Counts the bodies Django's ASGI handler starts to spool."""
    calls: list[int] = []
    read_body = ASGIHandler.read_body

    async def counting(self, receive):
        calls.append(1)
        return await read_body(self, receive)

    monkeypatch.setattr(ASGIHandler, "read_body", counting)
    return calls


@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_declared_body_over_the_limit_is_413_before_any_of_it_is_read(
    live_asgi_server, spooled, content_type
):
    with _connect(live_asgi_server) as sock:
        sock.sendall(
            b"POST /accounts/sign-in/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + f"Content-Type: {content_type}\r\n".encode()
            + b"Content-Length: 3000000000\r\n\r\n"
        )
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"larger than" in answer
    assert spooled == []


def test_a_chunked_body_is_cut_with_413_once_it_passes_the_limit(
    live_asgi_server, settings, spooled
):
    settings.REQUEST_MAX_UPLOAD_BYTES = 64 * 1024
    chunk = b"x" * 16 * 1024
    with _connect(live_asgi_server) as sock:
        sock.sendall(
            b"POST /accounts/sign-in/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: multipart/form-data; boundary=x\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        for _ in range(5):  # 80 KiB, and never the last chunk
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413")
    assert b"65,536 bytes" in answer


def test_a_body_trickling_below_the_floor_rate_is_ended_with_408(live_asgi_server, settings):
    settings.REQUEST_BODY_GRACE_SECONDS = 0.5
    settings.REQUEST_BODY_MIN_BYTES_PER_SECOND = 1000
    with _connect(live_asgi_server) as sock:
        sock.sendall(
            b"POST /accounts/sign-in/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n"
            b"Content-Length: 100000\r\n\r\nu"
        )
        answer = _answer(sock)  # one byte of 100,000: the server gives up, not the client
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"slower than 1,000 bytes per second" in answer


def test_an_upload_within_the_limits_still_reaches_the_collection(live_asgi_server, user):
    store = store_create(owner=user, name="Docs", provider="none")
    client = Client()
    client.force_login(user)
    cookies = {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}
    with httpx.Client(base_url=live_asgi_server.url, cookies=cookies, timeout=30) as browser:
        assert browser.get(f"/knowledge/{store.pk}/").status_code == 200
        # 3.2 MB: over the limit of a form without files, within the upload one
        body = b"Alpacas hum when they are calm.\n" * 100_000
        response = browser.post(
            f"/knowledge/{store.pk}/uploads/",
            files={"documents": ("alpacas.txt", body, "text/plain")},
            headers={"X-CSRFToken": browser.cookies[settings.CSRF_COOKIE_NAME]},
        )
    assert response.status_code == 302, response.text
    assert Source.objects.get(store=store).label == "alpacas.txt"


@pytest.fixture
def bounded_server(settings) -> Iterator[tuple[str, int]]:
    """The app under uvicorn with the protocol `python -m host.web` names."""
    settings.REQUEST_HEADER_TIMEOUT_SECONDS = 0.5
    settings.REQUEST_HEADER_MAX_BYTES = 4096
    from config.asgi import application

    command = uvicorn_command([])
    protocol = command[command.index("--http") + 1]
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            application,
            host="127.0.0.1",
            port=port,
            http=protocol,
            lifespan="off",
            log_level="warning",
            timeout_keep_alive=5,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    while not server.started and thread.is_alive():
        started.wait(0.05)
    assert server.started
    yield "127.0.0.1", port
    server.should_exit = True
    thread.join(timeout=10)


def test_a_connection_that_sends_no_request_is_closed_after_the_header_timeout(bounded_server):
    with socket.create_connection(bounded_server, timeout=30) as sock:
        assert _answer(sock).startswith(b"HTTP/1.1 408")


def test_headers_that_trickle_in_are_ended_with_408(bounded_server):
    with socket.create_connection(bounded_server, timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a")
        assert _answer(sock).startswith(b"HTTP/1.1 408")


def test_headers_over_the_size_limit_are_refused_with_431(bounded_server):
    with socket.create_connection(bounded_server, timeout=30) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 5000)
        assert _answer(sock).startswith(b"HTTP/1.1 431")


def test_requests_on_one_kept_alive_connection_still_work(bounded_server):
    host, port = bounded_server
    with httpx.Client(base_url=f"http://{host}:{port}", timeout=30) as client:
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
        # a body as big as the header limit, sent with its headers, is not counted as headers
        response = client.post(
            "/accounts/sign-in/",
            content=b"u=" + b"a" * 8000,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert response.status_code in (200, 403)


def test_the_launcher_bounds_idle_connections_and_headers(monkeypatch):
    monkeypatch.setenv("WEB_KEEP_ALIVE_SECONDS", "7")
    command = uvicorn_command([])
    assert command[command.index("--timeout-keep-alive") + 1] == "7"
    assert command[command.index("--http") + 1].endswith("web_protocol:BoundedHttpToolsProtocol")
    monkeypatch.setenv("WEB_KEEP_ALIVE_SECONDS", "soon")
    with pytest.raises(SystemExit, match="WEB_KEEP_ALIVE_SECONDS"):
        uvicorn_command([])


def test_a_websocket_handshake_still_reaches_the_app_through_the_bounded_protocol(
    bounded_server,
):
    host, port = bounded_server
    with socket.create_connection(bounded_server, timeout=30) as sock:
        sock.sendall(
            f"GET /ws/events/ HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nOrigin: http://{host}:{port}\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        status = sock.recv(65536).split(b"\r\n", 1)[0]
    # The app answered the handshake (a guest is turned down), not the header timeout.
    assert status == b"HTTP/1.1 403 Forbidden"
