"""Test connection is bounded as a whole, not only per read.

A server that sends its model list a byte at a time (each byte well within the read
timeout) kept the page waiting without end, and one that sent megabytes was read whole.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from accounts import probe
from accounts.probe import ConnectionProblem, server_models


def _serve(body: bytes, pace: float) -> Iterator[str]:
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            step = 1 if pace else len(body)
            try:
                for start in range(0, len(body), step):
                    if stop.is_set():
                        return
                    self.wfile.write(body[start : start + step])
                    self.wfile.flush()
                    if pace:
                        time.sleep(pace)  # the server's own pace, as a slow server would
            except (BrokenPipeError, ConnectionResetError):
                return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def trickling_server() -> Iterator[str]:
    yield from _serve(b'{"data": [{"id": "slow-model"}]}' + b" " * 200, pace=0.2)


@pytest.fixture
def huge_server() -> Iterator[str]:
    names = ",".join(f'{{"id": "model-{n:07d}"}}' for n in range(120_000))
    yield from _serve(f'{{"data": [{names}]}}'.encode(), pace=0)


@pytest.mark.django_db
def test_a_model_list_sent_a_byte_at_a_time_gives_up_within_the_whole_call_limit(
    trickling_server, monkeypatch
):
    monkeypatch.setattr(probe, "TOTAL_SECONDS", 1.5)
    started = time.monotonic()
    with pytest.raises(ConnectionProblem, match=r"1\.5 seconds"):
        server_models(base_url=trickling_server)
    assert time.monotonic() - started < 4


@pytest.mark.django_db
def test_a_model_list_of_megabytes_is_refused_without_reading_it_all(huge_server):
    with pytest.raises(ConnectionProblem, match="larger than"):
        server_models(base_url=huge_server)


@pytest.mark.django_db
def test_an_ordinary_model_list_still_works(fake_openai):
    assert server_models(base_url=fake_openai.base_url) == ["other-model", "test-model"]
