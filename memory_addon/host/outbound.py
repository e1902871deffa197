"""Which servers the host may call on a person's behalf (AI profiles, embeddings).

A profile's base URL is fetched from the server, so without a rule a person could make
it probe the internal network (cloud metadata, databases, admin panels). Defaults:
loopback is allowed (local models such as llama.cpp or Ollama on this machine),
private, link-local and reserved ranges are refused. An admin widens or narrows this
with OUTBOUND_ALLOW_PRIVATE, OUTBOUND_ALLOWED_HOSTS and OUTBOUND_DENIED_HOSTS.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.db import connection

from memory_addon.host.bounded_http import AnswerRefused as AnswerRefused
from memory_addon.host.bounded_http import BodyTooLarge as BodyTooLarge
from memory_addon.host.bounded_http import bounded_call as bounded_call
from memory_addon.host.bounded_http import shared_http_client as shared_http_client


class OutboundRefused(ValueError):
    """A URL the host will not call; the message says why and what an admin can change."""


def _addresses(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise OutboundRefused(f"The server cannot resolve the host name {host!r}.") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def check_outbound_url(
    url: str, *, unresolvable_ok: bool = False, allow_loopback: bool | None = None
) -> None:
    """Raise OutboundRefused unless the host may call `url` under the admin's rules.

    `unresolvable_ok`: when saving a profile, a name that does not resolve yet is
    accepted; it is checked again, resolved, before every call.
    `allow_loopback`: this machine may be called (default OUTBOUND_ALLOW_LOOPBACK, meant
    for a local model); webhook targets that anyone can set pass a stricter rule.
    """
    if allow_loopback is None:
        allow_loopback = settings.OUTBOUND_ALLOW_LOOPBACK
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OutboundRefused("Use an http:// or https:// address with a host name.")
    host = parts.hostname.lower().rstrip(".")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise OutboundRefused("The port in this address is not valid.") from None
    denied = {h.lower() for h in settings.OUTBOUND_DENIED_HOSTS}
    allowed = {h.lower() for h in settings.OUTBOUND_ALLOWED_HOSTS}
    if host in denied:
        raise OutboundRefused(f"An administrator has blocked calls to {host}.")
    if allowed and host in allowed:
        return
    if allowed:
        raise OutboundRefused(
            f"{host} is not among the servers an administrator allowed (OUTBOUND_ALLOWED_HOSTS)."
        )
    try:
        addresses = _addresses(host, port)
    except OutboundRefused:
        if unresolvable_ok:
            return
        raise
    for address in addresses:
        _check_address(host, address, allow_loopback=allow_loopback)


def _check_address(
    host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address, *, allow_loopback: bool
) -> None:
    """Refuse an address the host resolves to unless the admin's rules allow its range."""
    if address.is_loopback:
        if not allow_loopback:
            raise OutboundRefused("Calls to this machine (loopback) are turned off here.")
        return
    # Anything not globally routable: private ranges, link-local, and also shared
    # address space (100.64.0.0/10, where some clouds answer metadata requests).
    internal = not address.is_global or address.is_multicast
    if internal and not settings.OUTBOUND_ALLOW_PRIVATE:
        raise OutboundRefused(
            f"{host} is in a private or internal network range; an administrator can allow "
            "it with OUTBOUND_ALLOW_PRIVATE=true or OUTBOUND_ALLOWED_HOSTS."
        )


def release_db_connection() -> None:
    """Give the database connection back to the pool before waiting on another server.

    A request that holds a pooled connection while a slow model or embeddings server
    answers starves everyone else: a dozen such requests took the site down. Inside a
    transaction the connection has to stay (callers do not call out from one; tests
    run inside one).
    """
    if not connection.in_atomic_block:
        connection.close()


def read_bounded(
    method: str,
    url: str,
    *,
    timeout: httpx.Timeout | float,
    total_seconds: float,
    max_bytes: int,
    **kwargs: Any,
) -> tuple[int, bytes]:
    """One outside call whose answer is read whole, bounded as a whole (headers included)
    by `bounded_call`: raises httpx.ReadTimeout after `total_seconds` and BodyTooLarge
    beyond `max_bytes`; returns the status and the body."""
    with (
        bounded_call(total_seconds=total_seconds, max_bytes=max_bytes),
        shared_http_client().stream(method, url, timeout=timeout, **kwargs) as answer,
    ):
        return answer.status_code, answer.read()
