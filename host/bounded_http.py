"""Outside calls bounded as a whole: one deadline for connect, headers and body, and a
size cap per line and per reply.

httpx's timeouts bound each socket operation: a server that sends its headers or its
body a byte a second holds the caller for ever, and one endless line (a model's stream,
a JSON answer) is gathered into memory whole by whoever splits lines. Every outside call
goes through a client built on `bounded_transport()` (the host's is
`host.outbound.shared_http_client()`, whose connections are also checked
against the outbound rules) inside `bounded_call(...)`:

- its network streams give each read, write and TLS handshake only the time left, so
  the call ends at its deadline whatever the server does (`httpx.ReadTimeout`);
- the reply's body is counted as it arrives: `BodyTooLarge` past the reply cap,
  `LineTooLong` past the line cap, before the bytes reach the caller;
- it asks for an uncompressed answer and refuses a compressed one, so the counted bytes
  are the bytes the caller gets (no decompression bomb).

A call on such a client outside `bounded_call` is a programming error and raises. No
Django in here.
"""

from __future__ import annotations

import ssl
import time
import typing
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache, partial

import httpcore
import httpx


class AnswerRefused(httpx.HTTPError):
    """The server's answer was not read on; the message says why."""


class BodyTooLarge(AnswerRefused):
    """The server's answer is larger than the caller reads."""


class LineTooLong(BodyTooLarge):
    """One line of the server's answer is longer than the caller reads."""


class CompressedAnswer(AnswerRefused):
    """The server compressed its answer although asked not to."""


@dataclass
class CallBudget:
    total_seconds: float
    deadline: float
    headers_deadline: float
    max_bytes: int
    max_line_bytes: int
    headers_in: bool = False
    body_bytes: int = 0
    line_bytes: int = 0

    def time_left(self) -> float:
        due = self.deadline if self.headers_in else self.headers_deadline
        return due - time.monotonic()

    def take(self, chunk: bytes) -> None:
        """Count one piece of the body; raise once the reply or a line is over its cap."""
        self.body_bytes += len(chunk)
        if self.body_bytes > self.max_bytes:
            raise BodyTooLarge(f"the answer is larger than {self.max_bytes:,} bytes")
        first = chunk.find(b"\n")
        if first < 0:
            self.line_bytes += len(chunk)
        elif self.line_bytes + first > self.max_line_bytes:
            self.line_bytes += first
        else:
            self.line_bytes = len(chunk) - chunk.rfind(b"\n") - 1
        if self.line_bytes > self.max_line_bytes:
            raise LineTooLong(f"a line of the answer is longer than {self.max_line_bytes:,} bytes")


_budget: ContextVar[CallBudget | None] = ContextVar("outside_call_budget", default=None)


@contextmanager
def bounded_call(
    *,
    total_seconds: float,
    max_bytes: int,
    max_line_bytes: int | None = None,
    headers_seconds: float | None = None,
) -> Iterator[CallBudget]:
    """The calls made in this block (in this thread) end within `total_seconds` from
    now, the status and headers within `headers_seconds`, and read at most `max_bytes`
    of body with no line longer than `max_line_bytes` (default: the whole cap)."""
    now = time.monotonic()
    deadline = now + total_seconds
    budget = CallBudget(
        total_seconds=total_seconds,
        deadline=deadline,
        headers_deadline=min(deadline, now + headers_seconds) if headers_seconds else deadline,
        max_bytes=max_bytes,
        max_line_bytes=max_line_bytes if max_line_bytes is not None else max_bytes,
    )
    token = _budget.set(budget)
    try:
        yield budget
    finally:
        _budget.reset(token)


_Timeout = type[httpcore.ReadTimeout] | type[httpcore.WriteTimeout] | type[httpcore.ConnectTimeout]


def _time_left(timeout: float | None, error: _Timeout) -> float:
    budget = _budget.get()
    if budget is None:
        raise RuntimeError("An outside call needs its bounds: make it inside bounded_call().")
    left = budget.time_left()
    if left <= 0:
        raise error(f"the whole call took longer than {budget.total_seconds:g} s")
    return left if timeout is None else min(timeout, left)


def _within[T](timeout: float | None, error: _Timeout, operation: typing.Callable[[float], T]) -> T:
    """Run one socket operation with the time the call has left; a timeout that the
    whole call's deadline caused says so."""
    try:
        return operation(_time_left(timeout, error))
    except error:
        _time_left(None, error)
        raise


class _BoundedStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return _within(timeout, httpcore.ReadTimeout, partial(self.inner.read, max_bytes))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        _within(timeout, httpcore.WriteTimeout, partial(self.inner.write, buffer))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        handshake = partial(self.inner.start_tls, ssl_context, server_hostname)
        return _BoundedStream(_within(timeout, httpcore.ConnectTimeout, handshake))

    def get_extra_info(self, info: str) -> typing.Any:
        return self.inner.get_extra_info(info)


class _BoundedBackend(httpcore.NetworkBackend):
    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self.inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        connect = partial(
            self.inner.connect_tcp,
            host,
            port,
            local_address=local_address,
            socket_options=socket_options,
        )
        return _BoundedStream(_within(timeout, httpcore.ConnectTimeout, connect))

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        connect = partial(self.inner.connect_unix_socket, path, socket_options=socket_options)
        return _BoundedStream(_within(timeout, httpcore.ConnectTimeout, connect))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


class _CountedBody(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, budget: CallBudget, encoding: str) -> None:
        self.inner = inner
        self.budget = budget
        self.encoding = encoding

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if not chunk:
                continue
            if self.encoding not in ("", "identity"):
                raise CompressedAnswer(
                    f"the server compressed its answer ({self.encoding}) although asked not to"
                )
            self.budget.take(chunk)
            yield chunk

    def close(self) -> None:
        self.inner.close()


@cache
def _ssl_context() -> ssl.SSLContext:
    """Loading the CA bundle takes ~20 ms: once per process, shared by every transport."""
    return httpx.create_ssl_context()


class _BoundedTransport(httpx.HTTPTransport):
    def __init__(self, network_backend: httpcore.NetworkBackend | None = None) -> None:
        super().__init__(verify=_ssl_context())
        # httpx takes no network backend; its pool does, so it is swapped for one that has ours.
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_BoundedBackend(network_backend),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        budget = _budget.get()
        if budget is None:
            raise RuntimeError("An outside call needs its bounds: make it inside bounded_call().")
        budget.headers_in = False  # each request of the block (a retry) waits for its own
        budget.line_bytes = 0
        # Whatever client built the request (a library's own): the counted bytes are the
        # bytes the caller gets.
        request.headers["Accept-Encoding"] = "identity"
        response = super().handle_request(request)
        budget.headers_in = True
        encoding = response.headers.get("content-encoding", "").strip().lower()
        stream = typing.cast(httpx.SyncByteStream, response.stream)
        response.stream = _CountedBody(stream, budget, encoding)
        return response


def bounded_transport(
    network_backend: httpcore.NetworkBackend | None = None,
) -> httpx.BaseTransport:
    """A transport whose calls must run inside `bounded_call`; `network_backend` opens
    the connections (the outbound guard's checks each address first)."""
    return _BoundedTransport(network_backend)
