"""Request bodies bounded at the door, before any view (an ASGI middleware).

Django's ASGI handler spools the whole body to a temporary file before it runs a view,
and checks DATA_UPLOAD_MAX_MEMORY_SIZE only when the view reads it: without a bound
here anyone, signed in or not, could fill the disk or hold a connection for ever with a
body that never ends. A declared Content-Length over the limit is refused with 413
before a byte is read; a chunked body is counted and cut at the limit; a body that
falls below the floor rate (after a grace period) is ended with 408.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings

from host.asgi_answer import send_json_detail

Scope = dict[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def media_type(content_type: str) -> str:
    """`multipart/form-data` of `multipart/form-data; boundary=x`, lower case."""
    return content_type.split(";", 1)[0].strip().lower()


def body_limit(content_type: str) -> int:
    """The largest body a request of this type may carry: uploads come as multipart."""
    if media_type(content_type) == "multipart/form-data":
        return int(settings.REQUEST_MAX_UPLOAD_BYTES)
    form_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return int(form_limit if form_limit is not None else settings.REQUEST_MAX_UPLOAD_BYTES)


def request_header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _answer(send: Send, status: int, message: str) -> None:
    # The rest of the body is not read: the connection cannot carry another request.
    await send_json_detail(send, status, message, headers=[(b"connection", b"close")])


def _too_large(limit: int) -> str:
    return f"The request body is larger than {limit:,} bytes."


class _BodyGate:
    """The app's view of one request's body: counted, cut at the limit, held to the floor
    rate. After a refusal the app sees the client as gone and its answer is dropped."""

    def __init__(self, receive: Receive, send: Send, limit: int) -> None:
        self._receive = receive
        self._send = send
        self.limit = limit
        self.grace = float(settings.REQUEST_BODY_GRACE_SECONDS)
        self.rate = max(1, int(settings.REQUEST_BODY_MIN_BYTES_PER_SECOND))
        self.started = asyncio.get_running_loop().time()
        self.received = 0
        self.complete = False
        self.refused = False
        self.answering = False

    async def receive(self) -> Message:
        if self.refused:
            return {"type": "http.disconnect"}
        if self.complete:  # the app now only listens for the client going away
            return await self._receive()
        # What has arrived so far buys time at the floor rate, after the grace period.
        due = self.started + self.grace + self.received / self.rate
        try:
            async with asyncio.timeout_at(due):
                message = await self._receive()
        except TimeoutError:
            return await self._refuse(
                408, f"The request body arrived slower than {self.rate:,} bytes per second."
            )
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                return await self._refuse(413, _too_large(self.limit))
            self.complete = not message.get("more_body", False)
        return message

    async def _refuse(self, status: int, message: str) -> Message:
        self.refused = True
        if not self.answering:
            await _answer(self._send, status, message)
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.answering = True
        await self._send(message)


class BoundedRequests:
    """Wraps the HTTP app (Django and the MCP transport) in config/asgi.py."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit(request_header(scope, b"content-type") or "")
        declared = request_header(scope, b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _answer(send, 400, "The Content-Length header is not a number.")
                return
            if size > limit:
                await _answer(send, 413, _too_large(limit))
                return
        gate = _BodyGate(receive, send, limit)
        await self.app(scope, gate.receive, gate.send)
