"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import asyncio
import importlib
import os
from typing import Any

from host import embedded
from host.asgi_handler import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
embedded.start()  # the embedded servers, unless DATABASE_URL / REDIS_URL name others
# A client hanging up mid-request does not cost the worker a database connection.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import path  # noqa: E402
from django.utils.translation import gettext  # noqa: E402

from host import pool_watch, request_places  # noqa: E402
from host.asgi_answer import send_json_detail  # noqa: E402
from host.consumers import EventsConsumer  # noqa: E402
from host.request_limits import BoundedRequests, media_type, request_header  # noqa: E402
from host.security_headers import with_security_headers  # noqa: E402
from host.websocket_origin import SameOriginValidator  # noqa: E402

websocket_urlpatterns = [path("ws/events/", EventsConsumer.as_asgi())]


class _McpOnFirstCall:
    """The MCP server (B1), imported by the first call that needs it: the SDK holds about
    50 MB in every web worker that loads it, and most workers of a host never see an MCP
    client. The import runs in a thread, so the worker's other requests go on meanwhile."""

    def __init__(self) -> None:
        self._app: Any = None

    async def app(self) -> Any:
        if self._app is None:
            # Two first calls at once import once: Python's import lock makes one wait.
            module = await asyncio.to_thread(importlib.import_module, "config.mcp_server")
            self._app = module.mcp_app
        return self._app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await (await self.app())(scope, receive, send)


mcp_on_first_call = _McpOnFirstCall()


async def _whole_body(receive: Any) -> list[dict[str, Any]] | None:
    """The request's body messages (BoundedRequests caps its size and rate); None when
    the client left first."""
    messages: list[dict[str, Any]] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        messages.append(message)
        if not message.get("more_body"):
            return messages


async def mcp_in_a_place(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An MCP call takes one of the worker's places as a Django request does, so a flood
    of tool calls waits its turn instead of starving the worker's pages and API calls.

    Only POST is served: this server is stateless and answers in one JSON, so it has no
    stream to open (GET) and no session to end (DELETE), which the protocol lets it
    refuse with 405; an open stream would have held a place for as long as the client
    liked. As Django does, the whole body is read before a place is taken, so a client
    sending it slowly holds none, and a client that leaves while its call waits for a
    place is never run. The place is kept until the answer is sent.
    """
    if scope.get("method") != "POST":
        await send_json_detail(
            send, 405, "This MCP endpoint answers POST only.", headers=[(b"allow", b"POST")]
        )
        return
    # A call is one JSON-RPC message: held to the JSON body limit (BoundedRequests), not
    # to the upload limit a multipart Content-Type would have bought it.
    if media_type(request_header(scope, b"content-type") or "") != "application/json":
        await send_json_detail(
            send, 415, "An MCP call is a JSON-RPC message: send Content-Type: application/json."
        )
        return
    body = await _whole_body(receive)
    if body is None:
        return
    place = request_places.Place(django_asgi_app.places())
    # After the body only a disconnect comes.
    hang_up: asyncio.Future[dict[str, Any]] = asyncio.ensure_future(receive())
    taking = asyncio.ensure_future(place.take(settings.WEB_REQUEST_QUEUE_SECONDS))
    waits: set[asyncio.Future[Any]] = {hang_up, taking}
    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    if not taking.done():  # the client left while the call waited
        taking.cancel()
        await asyncio.gather(taking, return_exceptions=True)
        place.give_back()
        return
    if not taking.result():
        hang_up.cancel()
        retry = str(request_places.RETRY_AFTER_SECONDS).encode()
        busy = gettext("The server is busy. Try again in a moment.")
        await send_json_detail(send, 503, busy, headers=[(b"retry-after", retry)])
        return

    async def replayed() -> dict[str, Any]:
        if body:
            return body.pop(0)
        return await hang_up

    token = request_places.enter(place)
    try:
        await mcp_on_first_call(scope, replayed, send)
    finally:
        request_places.leave(token)
        place.give_back()
        hang_up.cancel()


# Every answer at /mcp/, the door's own refusals included, carries the site's headers.
mcp_door = with_security_headers(mcp_in_a_place)


async def http_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """MCP (B1) at /mcp/ goes to the SDK's transport; everything else to Django."""
    if scope["path"] in ("/mcp", "/mcp/"):
        await mcp_door(scope, receive, send)
    else:
        await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        # Bodies are bounded before Django spools them to disk (size and floor rate).
        "http": BoundedRequests(http_app),
        # Each serving worker watches its database pool (host/pool_watch.py).
        "lifespan": pool_watch.lifespan,
        "websocket": SameOriginValidator(
            AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
        ),
    }
)
