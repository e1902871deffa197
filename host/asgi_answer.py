"""A JSON error answer written straight to an ASGI `send`, for the ASGI apps and
wrappers that answer before Django does (request limits, the MCP mount)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]


async def send_json_detail(
    send: Send, status: int, detail: str, *, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """`{"detail": …}` with `status`, as the REST API answers its errors."""
    body = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
