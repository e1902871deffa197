"""uvicorn's httptools protocol with a bound on each request's line and headers.

uvicorn times out idle keep-alive connections only: a client that opens a connection
and sends nothing, or sends its headers a byte at a time, holds it for ever, and
httptools buffers a header of any size. Here a request's line and headers must be in
within REQUEST_HEADER_TIMEOUT_SECONDS (counted from the connection, or from the first
byte of a later request on it) and within REQUEST_HEADER_MAX_BYTES. Bodies are bounded
by the ASGI middleware (host/request_limits.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_END_OF_HEADERS = b"\r\n\r\n"


def _refusal(status: bytes) -> bytes:
    return b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = float(settings.REQUEST_HEADER_TIMEOUT_SECONDS)
        self.header_max_bytes = int(settings.REQUEST_HEADER_MAX_BYTES)
        self.header_timer: asyncio.TimerHandle | None = None
        self.awaiting_headers = True
        self.header_bytes = 0
        self.header_tail = b""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()  # a connection that sends nothing is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.awaiting_headers:
            # Only what comes before the blank line counts: a body may follow in the same read.
            seen = self.header_tail + data
            end = seen.find(_END_OF_HEADERS)
            self.header_bytes += len(data) if end < 0 else max(0, end - len(self.header_tail))
            self.header_tail = seen[-3:]
            if self.header_bytes > self.header_max_bytes:
                self._refuse(b"431 Request Header Fields Too Large")
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.awaiting_headers = True
        if self.header_timer is None:
            self._arm_header_timer()

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        self.awaiting_headers = False
        self.header_bytes = 0
        self.header_tail = b""
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.awaiting_headers = True

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self.header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_too_slow(self) -> None:
        self.header_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False  # the answer in progress ends, then the connection
            return
        self._refuse(b"408 Request Timeout")

    def _refuse(self, status: bytes) -> None:
        self._cancel_header_timer()
        if not self.transport.is_closing():
            self.transport.write(_refusal(status))
            self.transport.close()
