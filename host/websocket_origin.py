"""Websocket origin check: scheme, host and port must be this site's own.

Channels' AllowedHostsOriginValidator compares only the host name, so a page on
http://site:9999 or an http:// origin of an https:// site would be let in.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_key(scheme: str, host: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(f"{scheme}://{host}")
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return scheme, parts.hostname.lower(), port


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


def expected_scheme(scope: dict[str, Any]) -> str:
    scheme = "https" if scope.get("scheme") == "wss" else "http"
    if getattr(settings, "SECURE_PROXY_SSL_HEADER", None):
        forwarded = _header(scope, b"x-forwarded-proto").split(",")[0].strip().lower()
        if forwarded in ("http", "https"):
            scheme = forwarded
    return scheme


def origin_allowed(scope: dict[str, Any]) -> bool:
    origin = _header(scope, b"origin")
    if not origin:
        return False
    parts = urlsplit(origin)
    given = _origin_key(parts.scheme.lower(), parts.netloc)
    if given is None:
        return False
    own = _origin_key(expected_scheme(scope), _header(scope, b"host"))
    trusted = {
        _origin_key(urlsplit(o).scheme, urlsplit(o).netloc) for o in settings.CSRF_TRUSTED_ORIGINS
    }
    return given == own or given in trusted


class SameOriginValidator:
    """ASGI middleware: refuse a websocket whose Origin is not exactly this site."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
