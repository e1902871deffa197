"""The one gate every outside delivery passes (event endpoints and bridge callbacks).

Per receiver it keeps at most one POST in flight (a claim on its DeliveryTarget row,
taken by a conditional UPDATE and released after the call: no transaction or row lock
is held across the outside call) and a circuit breaker: after
WEBHOOK_CIRCUIT_FAILURES retryable failures in a row the receiver is paused for a
cool-down; a delivery that meets a busy or paused receiver is deferred, not attempted,
so it is neither lost nor counted. When the pause ends one probe goes out (the claim
keeps it single): a success closes the circuit, a failure doubles the cool-down (capped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from bridges.models import DeliveryTarget
from bridges.outgoing import PostResult, post_signed


@dataclass(frozen=True)
class Deferred:
    """Nothing was sent: try again at `until` (the receiver is busy or paused)."""

    until: datetime
    paused: bool


def _target_id(*, endpoint_id: int | None, binding_id: int | None) -> int:
    if endpoint_id is not None:
        target, _ = DeliveryTarget.objects.get_or_create(endpoint_id=endpoint_id)
    else:
        target, _ = DeliveryTarget.objects.get_or_create(binding_id=binding_id)
    return target.pk


def _claim(target_id: int) -> Deferred | None:
    now = timezone.now()
    claimed = (
        DeliveryTarget.objects.filter(pk=target_id)
        .filter(Q(in_flight_until__isnull=True) | Q(in_flight_until__lt=now))
        .filter(Q(paused_until__isnull=True) | Q(paused_until__lte=now))
        .update(in_flight_until=now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS))
    )
    if claimed:
        return None
    paused_until = DeliveryTarget.objects.values_list("paused_until", flat=True).get(pk=target_id)
    if paused_until and paused_until > now:
        return Deferred(paused_until, paused=True)
    return Deferred(now + timedelta(seconds=settings.WEBHOOK_BUSY_RETRY_SECONDS), paused=False)


def _record(target_id: int, result: PostResult) -> None:
    """Give the claim back and move the breaker by the call's outcome."""
    with transaction.atomic(durable=True):
        target = DeliveryTarget.objects.select_for_update().get(pk=target_id)
        target.in_flight_until = None
        if result.ok:
            target.consecutive_failures = 0
            target.paused_until = None
            target.pause_seconds = 0
            target.pause_reason = ""
        elif result.retryable:
            # A refusal (4xx, an outbound rule) is about the event, not a sign the
            # receiver is down: only what would be retried counts toward the breaker.
            target.consecutive_failures += 1
            if target.consecutive_failures >= settings.WEBHOOK_CIRCUIT_FAILURES:
                target.pause_seconds = min(
                    target.pause_seconds * 2 or settings.WEBHOOK_CIRCUIT_COOLDOWN_SECONDS,
                    settings.WEBHOOK_CIRCUIT_MAX_COOLDOWN_SECONDS,
                )
                target.paused_until = timezone.now() + timedelta(seconds=target.pause_seconds)
                target.pause_reason = result.error
        target.save()


def _release(target_id: int) -> None:
    DeliveryTarget.objects.filter(pk=target_id).update(in_flight_until=None)


def gated_post(
    url: str,
    *,
    endpoint_id: int | None = None,
    binding_id: int | None = None,
    secret: str,
    msg_id: str,
    body: bytes,
    also_signed_with: Sequence[str] = (),
) -> PostResult | Deferred:
    """POST through the receiver's gate, or say when to try again without sending."""
    target_id = _target_id(endpoint_id=endpoint_id, binding_id=binding_id)
    deferred = _claim(target_id)
    if deferred is not None:
        return deferred
    try:
        result = post_signed(
            url, secret=secret, msg_id=msg_id, body=body, also_signed_with=also_signed_with
        )
    except BaseException:
        _release(target_id)
        raise
    _record(target_id, result)
    return result


def seconds_until(moment: datetime) -> float:
    return max((moment - timezone.now()).total_seconds(), 0.0)
