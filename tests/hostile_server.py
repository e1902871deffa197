"""A raw-socket HTTP server that misbehaves on purpose, for the outside-call bounds.

- "slow_headers": answers with a status line and then a header one byte per `pace`
  seconds, without end (each byte well within any per-read timeout);
- "endless_line": answers 200 with a body that is one line without a newline, as fast
  as the client reads it.

It counts the bytes it managed to send; its send buffer is small, so that count is
close to what the client read.
"""

from __future__ import annotations

import socket
import threading
from typing import Literal

Mode = Literal["slow_headers", "endless_line"]
BLOCK = b"x" * 65536


class HostileServer:
    def __init__(self, mode: Mode, *, pace: float = 0.1, content_type: str = "text/event-stream"):
        self.mode = mode
        self.pace = pace
        self.content_type = content_type
        self.sent = 0
        self.requests: list[bytes] = []
        self.gave_up = threading.Event()  # the client closed the connection
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def start(self) -> HostileServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                data = conn.recv(65536)
                if not data:
                    return
                request += data
            self.requests.append(request)
            try:
                if self.mode == "slow_headers":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    while not self._stop.wait(self.pace):  # the server's own pace
                        conn.sendall(b"a")
                        self.sent += 1
                else:
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: "
                        + self.content_type.encode()
                        + b"\r\nConnection: close\r\n\r\ndata: "
                    )
                    while not self._stop.is_set():
                        conn.sendall(BLOCK)
                        self.sent += len(BLOCK)
            except OSError:
                self.gave_up.set()
