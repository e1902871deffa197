"""One signed POST to an outside server (a bridge's callback, an integrator's endpoint).

The database connection is given back before the call, the URL is checked (and resolved)
against the admin's outbound rules right before it, every call is bounded by timeouts,
redirects are not followed, and no answer body is kept.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
from django.conf import settings

from bridges.signing import sign_headers
from host.outbound import (
    OutboundRefused,
    bounded_call,
    check_outbound_url,
    release_db_connection,
    shared_http_client,
)


@dataclass(frozen=True)
class PostResult:
    ok: bool
    status_code: int | None
    error: str
    retryable: bool
    duration_ms: int


def check_webhook_target(url: str, *, unresolvable_ok: bool = False) -> None:
    """Callbacks and event endpoints are set by any signed-in person: the outbound rules,
    with this machine refused unless WEBHOOK_ALLOW_LOOPBACK (AI profiles use their own)."""
    check_outbound_url(
        url, unresolvable_ok=unresolvable_ok, allow_loopback=settings.WEBHOOK_ALLOW_LOOPBACK
    )


def post_signed(
    url: str, *, secret: str, msg_id: str, body: bytes, also_signed_with: Sequence[str] = ()
) -> PostResult:
    started = time.monotonic()

    def done(ok: bool, status: int | None, error: str, retryable: bool) -> PostResult:
        elapsed = int((time.monotonic() - started) * 1000)
        return PostResult(ok, status, error[:500], retryable, elapsed)

    release_db_connection()
    try:
        check_webhook_target(url)
    except OutboundRefused as refusal:
        return done(False, None, str(refusal), False)
    timeout = httpx.Timeout(
        settings.WEBHOOK_READ_TIMEOUT_SECONDS, connect=settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS
    )
    total = settings.WEBHOOK_CONNECT_TIMEOUT_SECONDS + settings.WEBHOOK_READ_TIMEOUT_SECONDS
    headers = sign_headers(secret, msg_id=msg_id, body=body, also_signed_with=also_signed_with)
    try:
        # Only the status counts; the body is never read, so a receiver that sends one
        # slowly or without end cannot hold the delivery job; one that sends its headers
        # slowly is ended by the whole call's deadline.
        with (
            bounded_call(total_seconds=total, max_bytes=0),
            shared_http_client(allow_loopback=settings.WEBHOOK_ALLOW_LOOPBACK).stream(
                "POST", url, content=body, headers=headers, timeout=timeout
            ) as response,
        ):
            status = response.status_code
    except OutboundRefused as refusal:  # the name resolved elsewhere at connect time
        return done(False, None, str(refusal), False)
    except httpx.TimeoutException:
        return done(False, None, "The server did not answer in time.", True)
    except httpx.HTTPError as error:
        return done(False, None, f"Could not reach the server ({type(error).__name__}).", True)
    if 200 <= status < 300:
        return done(True, status, "", False)
    retryable = status >= 500 or status in (408, 429)
    return done(False, status, f"The server answered {status}.", retryable)


def backoff_seconds(attempts: int) -> float:
    """Exponential backoff with jitter: base, 2 base, 4 base … capped, ±20%."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS * (2 ** max(attempts - 1, 0))
    wait = min(base, settings.WEBHOOK_RETRY_MAX_SECONDS)
    return float(wait) * random.uniform(0.8, 1.2)  # noqa: S311 - jitter, not a secret
