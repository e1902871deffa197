"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

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
from django.urls import path  # noqa: E402

from config.mcp_server import mcp_app  # noqa: E402
from host import pool_watch  # noqa: E402
from host.consumers import EventsConsumer  # noqa: E402
from host.request_limits import BoundedRequests  # noqa: E402
from host.security_headers import with_security_headers  # noqa: E402
from host.websocket_origin import SameOriginValidator  # noqa: E402

websocket_urlpatterns = [path("ws/events/", EventsConsumer.as_asgi())]
mcp_with_headers = with_security_headers(mcp_app)


async def http_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """MCP (B1) at /mcp/ goes to the SDK's transport; everything else to Django."""
    if scope["path"] in ("/mcp", "/mcp/"):
        await mcp_with_headers(scope, receive, send)
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
