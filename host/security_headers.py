"""The site's security headers on answers that do not come from Django (the MCP mount).

Django's SecurityMiddleware, XFrameOptionsMiddleware and django-csp set these on every
page and API answer; an ASGI app mounted beside Django gets them from this wrapper, from
the same settings. Its answers are JSON for programs, so the policy allows nothing to
load and nobody to frame them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

_NOTHING_TO_LOAD = b"default-src 'none'; frame-ancestors 'none'"


def _headers() -> list[tuple[bytes, bytes]]:
    headers = [
        (b"content-security-policy", _NOTHING_TO_LOAD),
        (b"x-frame-options", str(settings.X_FRAME_OPTIONS).encode()),
        # Answers hold a person's memory: no shared or back-button cache keeps them.
        (b"cache-control", b"no-store, private, max-age=0"),
    ]
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        headers.append((b"referrer-policy", str(settings.SECURE_REFERRER_POLICY).encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        opener = str(settings.SECURE_CROSS_ORIGIN_OPENER_POLICY).encode()
        headers.append((b"cross-origin-opener-policy", opener))
    return headers


def with_security_headers(app: ASGIApp) -> ASGIApp:
    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(n, v) for n, v in _headers() if n not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await app(scope, receive, send_with_headers)

    return wrapped
