"""A receiver that answers 200 and then sends its body a byte at a time
held the delivery job (each byte came within the read timeout); only the status counts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bridges.outgoing import post_signed


@pytest.fixture
def trickling_receiver() -> Iterator[str]:
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            try:
                while not stop.is_set():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)  # the receiver's own pace
            except (BrokenPipeError, ConnectionResetError):
                return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


def test_a_delivery_counts_the_status_and_never_waits_for_a_trickling_body(
    trickling_receiver, settings
):
    settings.WEBHOOK_READ_TIMEOUT_SECONDS = 5
    started = time.monotonic()
    result = post_signed(
        trickling_receiver, secret="whsec_" + "A" * 32, msg_id="msg_1", body=b'{"a": 1}'
    )
    assert result.ok and result.status_code == 200
    assert time.monotonic() - started < 3
