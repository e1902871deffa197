"""The address a request came from: the one reader for sign-up limits, sign-in
throttling and log lines.

X-Forwarded-For is written left to right by whoever the request passed through, and
its leftmost entries come from the client itself. Only the hops added by proxies we
run (TRUSTED_PROXIES) are believed: walking from the right, the first address that is
not one of ours is the client. Without a trusted peer the header is ignored.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@lru_cache(maxsize=8)
def _trusted(entries: tuple[str, ...]) -> tuple[Network, ...]:
    # The settings checked every entry at start-up (env_networks).
    return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)


def _address(text: str) -> Address | None:
    value = text.strip()
    if value.startswith("[") and "]" in value:  # "[v6]" or "[v6]:port"
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # "v4:port"
        value = value.split(":", 1)[0]
    try:
        found = ipaddress.ip_address(value)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped:
        return found.ipv4_mapped  # one client, one key, however the socket wrote it
    return found


def forwarded_client(peer: str, forwarded_for: str, trusted: tuple[Network, ...]) -> str:
    """The client address, given the socket peer and the X-Forwarded-For value."""
    current = _address(peer)
    if current is None:
        return peer
    for hop in reversed([part for part in forwarded_for.split(",") if part.strip()]):
        if not any(current in network for network in trusted):
            break
        previous = _address(hop)
        if previous is None:  # a trusted proxy never writes this: stop at the proxy
            break
        current = previous
    return str(current)


def client_address(request: HttpRequest) -> str:
    return forwarded_client(
        str(request.META.get("REMOTE_ADDR") or ""),
        str(request.META.get("HTTP_X_FORWARDED_FOR") or ""),
        _trusted(tuple(settings.TRUSTED_PROXIES)),
    )
