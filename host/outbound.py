"""Which servers the host may call on a person's behalf (AI profiles, embeddings).

A profile's base URL is fetched from the server, so without a rule a person could make
it probe the internal network (cloud metadata, databases, admin panels). Every outside
call goes through a guarded client (guarded_transport): each connection resolves the
name, checks every address in every form it can take, and connects to a checked one.
Defaults:
loopback is allowed (local models such as llama.cpp or Ollama on this machine),
private, link-local and reserved ranges are refused. An admin widens or narrows this
with OUTBOUND_ALLOW_PRIVATE, OUTBOUND_ALLOWED_HOSTS and OUTBOUND_DENIED_HOSTS.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings
from django.db import connection

from host.bounded_http import AnswerRefused as AnswerRefused
from host.bounded_http import BodyTooLarge as BodyTooLarge
from host.bounded_http import bounded_call as bounded_call
from host.bounded_http import bounded_transport
from host.keyed_transaction import leave_keyed_transaction
from host.request_places import waiting_elsewhere


class OutboundRefused(ValueError):
    """A URL the host will not call; the message says why and what an admin can change."""


class _Unresolvable(OutboundRefused):
    pass


Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # ::a.b.c.d, deprecated but routed
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Local-use NAT64 (RFC 8215) and the ranges Python 3.12's is_global still calls global.
_INTERNAL_V6 = tuple(
    ipaddress.ip_network(block)
    for block in ("64:ff9b:1::/48", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8", "::/128")
)


def delivered_to(address: Address) -> list[Address]:
    """Where packets for `address` end up: the IPv4 address an IPv6 transition form
    (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo) carries, else the address."""
    if isinstance(address, ipaddress.IPv4Address):
        return [address]
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.ipv4_mapped:
        return [address.ipv4_mapped]
    if address.teredo:  # the relay server and the client behind it
        return list(address.teredo)
    if address.sixtofour:
        return [address.sixtofour]
    if address in _NAT64:
        return [low]
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # not :: nor ::1
        return [low]
    return [address]


def _internal(address: Address) -> bool:
    # Anything not globally routable: private ranges, link-local, and also shared
    # address space (100.64.0.0/10, where some clouds answer metadata requests).
    return (
        not address.is_global
        or address.is_multicast
        or address.is_unspecified
        or address.is_link_local
        or address.is_reserved
        or (isinstance(address, ipaddress.IPv6Address) and any(address in n for n in _INTERNAL_V6))
    )


def _addresses(host: str, port: int) -> list[Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise _Unresolvable(f"The server cannot resolve the host name {host!r}.") from None
    found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    return list(dict.fromkeys(found))


def checked_addresses(host: str, port: int, *, allow_loopback: bool) -> list[Address]:
    """Resolve `host` and return its addresses if the admin's rules allow every one of
    them; raise OutboundRefused otherwise. Connections go to these addresses only, so a
    name that resolves differently a moment later (DNS rebinding) gains nothing."""
    host = host.lower().rstrip(".")
    denied = {h.lower() for h in settings.OUTBOUND_DENIED_HOSTS}
    allowed = {h.lower() for h in settings.OUTBOUND_ALLOWED_HOSTS}
    if host in denied:
        raise OutboundRefused(f"An administrator has blocked calls to {host}.")
    if allowed and host in allowed:
        return _addresses(host, port)
    if allowed:
        raise OutboundRefused(
            f"{host} is not among the servers an administrator allowed (OUTBOUND_ALLOWED_HOSTS)."
        )
    addresses = _addresses(host, port)
    for address in addresses:
        _check_address(host, address, allow_loopback=allow_loopback)
    return addresses


def check_outbound_url(
    url: str, *, unresolvable_ok: bool = False, allow_loopback: bool | None = None
) -> None:
    """Raise OutboundRefused unless the host may call `url` under the admin's rules.

    `unresolvable_ok`: when saving a profile, a name that does not resolve yet is
    accepted; every connection checks it again (guarded clients below).
    `allow_loopback`: this machine may be called (default OUTBOUND_ALLOW_LOOPBACK, meant
    for a local model); webhook targets that anyone can set pass a stricter rule.
    """
    if allow_loopback is None:
        allow_loopback = settings.OUTBOUND_ALLOW_LOOPBACK
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OutboundRefused("Use an http:// or https:// address with a host name.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise OutboundRefused("The port in this address is not valid.") from None
    try:
        checked_addresses(parts.hostname, port, allow_loopback=allow_loopback)
    except _Unresolvable:
        if not unresolvable_ok:
            raise


def _check_address(host: str, address: Address, *, allow_loopback: bool) -> None:
    """Refuse an address the host resolves to unless the admin's rules allow its range."""
    for target in delivered_to(address):
        if target.is_loopback:
            if not allow_loopback:
                raise OutboundRefused("Calls to this machine (loopback) are turned off here.")
            continue
        if _internal(target) and not settings.OUTBOUND_ALLOW_PRIVATE:
            raise OutboundRefused(
                f"{host} is in a private or internal network range; an administrator can "
                "allow it with OUTBOUND_ALLOW_PRIVATE=true or OUTBOUND_ALLOWED_HOSTS."
            )


@dataclass(frozen=True)
class _Rule:
    """Which addresses a guarded client's connections may go to."""

    allow_loopback: bool | None  # None: OUTBOUND_ALLOW_LOOPBACK, read at connect time
    trusted_hosts: frozenset[str] = frozenset()  # named by an admin: any address

    def addresses(self, host: str, port: int) -> list[Address]:
        name = host.lower().rstrip(".")
        if name in self.trusted_hosts:
            return _addresses(name, port)
        loopback = (
            settings.OUTBOUND_ALLOW_LOOPBACK if self.allow_loopback is None else self.allow_loopback
        )
        return checked_addresses(name, port, allow_loopback=loopback)


class _GuardedBackend(httpcore.SyncBackend):
    def __init__(self, rule: _Rule) -> None:
        self._rule = rule

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        # Like socket.create_connection, one address after the other, but only checked ones.
        failure: Exception = OutboundRefused("The host name resolved to no address.")
        for address in self._rule.addresses(host, port):
            try:
                return super().connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        raise failure


def guarded_transport(
    *, allow_loopback: bool | None = None, trusted_hosts: Iterable[str] = ()
) -> httpx.BaseTransport:
    """A bounded transport (host/bounded_http.py) whose every new connection
    resolves the host, checks each address against the outbound rules, and connects to a
    checked address (TLS still verifies the host name): redirects and names that resolve
    elsewhere later cannot reach a refused address. No proxy from the environment: it
    would resolve the name itself."""
    rule = _Rule(allow_loopback, frozenset(h.lower() for h in trusted_hosts))
    return bounded_transport(_GuardedBackend(rule))


def release_db_connection() -> None:
    """Give the database connection back to the pool before waiting on another server.

    A request that holds a pooled connection while a slow model or embeddings server
    answers starves everyone else: a dozen such requests took the site down. Inside a
    transaction the connection has to stay (callers do not call out from one; tests
    run inside one). A keyed write's transaction (host/idempotency.py) is ended instead:
    its request runs again without one. The request's place in the web worker goes to the
    next request too (host/request_places.py).
    """
    waiting_elsewhere()
    leave_keyed_transaction()
    if not connection.in_atomic_block:
        connection.close()


_http_clients: dict[tuple[int, bool | None], httpx.Client] = {}
_http_clients_lock = threading.Lock()


def shared_http_client(*, allow_loopback: bool | None = None) -> httpx.Client:
    """One guarded, bounded httpx client per process and loopback rule for outside calls
    (it follows no redirects); `allow_loopback` as in check_outbound_url. Every call on
    it runs inside `bounded_call`.

    A new client per call loads the CA bundle and builds a TLS context (~20 ms), more
    than a small POST costs. httpx.Client is thread-safe; each call passes its own
    timeout. Keyed by pid, so a forked worker child gets its own, and by the rule, so a
    connection opened under a wider rule is never reused under a narrower one.
    """
    key = (os.getpid(), allow_loopback)
    with _http_clients_lock:
        client = _http_clients.get(key)
        if client is None:
            transport = guarded_transport(allow_loopback=allow_loopback)
            client = _http_clients[key] = httpx.Client(transport=transport)
        return client


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
