"""Outgoing events (B4): written to the outbox in the change's own transaction, sent later.

The memory and knowledge services send signals inside their transaction and the
receivers at the end of this module call `outbox_emit` (connected in bridges/apps.py),
so a rolled-back change leaves no event and a committed one always has its event. A
Celery task then delivers each endpoint's events one at a time in sequence order
(a lease on the endpoint row keeps a second sender out), with Standard Webhooks
signatures, backoff on 5xx and timeouts, and a delivery log.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from bridges.delivery_gate import Deferred, gated_post, seconds_until
from bridges.models import DeliveryAttempt, EventEndpoint, OutboxEvent
from bridges.outgoing import backoff_seconds
from bridges.selectors import person_endpoints
from host.queue import queue_job, queue_job_on_commit

logger = logging.getLogger(__name__)

MEMORY_CHANGED = EventEndpoint.EventType.MEMORY_CHANGED
PROPOSAL_CREATED = EventEndpoint.EventType.PROPOSAL_CREATED
PROPOSAL_RESOLVED = EventEndpoint.EventType.PROPOSAL_RESOLVED
KNOWLEDGE_INDEXED = EventEndpoint.EventType.KNOWLEDGE_INDEXED


# What an event may say in words: kinds the host itself names, never text a person or
# the model wrote (a reason, a summary, a file name, a note). The kinds of the apps whose
# services announce events (origins, sources, states) are added when bridges starts.
_EVENT_KINDS: set[str] = {"applied", "undone", "restored"}


def event_kinds_allow(kinds: Iterable[str]) -> None:
    _EVENT_KINDS.update(kinds)


def event_kinds() -> frozenset[str]:
    return frozenset(_EVENT_KINDS)


_COUNT_NAME = re.compile(r"^[a-z][a-z_]{0,39}$")

EventValue = int | bool | str | dict[str, int] | None


def _check_event_data(data: dict[str, EventValue]) -> None:
    """Ids, kinds and counts only (B4): the one check every event body passes."""
    for key, value in data.items():
        if value is None or isinstance(value, int):
            continue
        if isinstance(value, str) and value in _EVENT_KINDS:
            continue
        if isinstance(value, dict) and all(
            _COUNT_NAME.match(name) and type(count) is int for name, count in value.items()
        ):
            continue
        raise TypeError(f"Event field {key!r} is not an id, a kind or a count.")


def _endpoints_for(user_id: int, event_type: str) -> list[int]:
    return [e.pk for e in person_endpoints(user_id) if event_type in e.hears]


def outbox_emit(*, user_id: int, event_type: str, data: dict[str, EventValue]) -> int:
    """Write one event per subscribed endpoint, inside the caller's transaction.

    `data` holds ids, kinds and counts only (checked). Returns how many rows were written.
    """
    _check_event_data(data)
    endpoint_ids = _endpoints_for(user_id, event_type)
    if not endpoint_ids:
        return 0
    now = timezone.now()
    payload = {
        "type": event_type,
        "timestamp": now.isoformat(),
        "data": {"user_id": user_id, **data},
    }
    rows = []
    for endpoint_id in sorted(endpoint_ids):
        # The row lock taken by this update is held until commit: a concurrent change
        # waits here, so sequence order is commit order.
        EventEndpoint.objects.filter(pk=endpoint_id).update(next_sequence=F("next_sequence") + 1)
        sequence = (
            EventEndpoint.objects.filter(pk=endpoint_id).values_list("next_sequence", flat=True)[0]
            - 1
        )
        rows.append(
            OutboxEvent(
                endpoint_id=endpoint_id,
                sequence=sequence,
                webhook_id=f"msg_{uuid.uuid4().hex}",
                event_type=event_type,
                payload={**payload, "sequence": sequence},
                deadline_at=now + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS),
            )
        )
    OutboxEvent.objects.bulk_create(rows)
    for endpoint_id in endpoint_ids:
        _deliver_on_commit(endpoint_id)
    return len(rows)


def _deliver_on_commit(endpoint_id: int, countdown: float = 0) -> None:
    queue_job_on_commit("bridges.endpoint_deliver", endpoint_id, countdown=countdown)


# --- Delivery --------------------------------------------------------------------


def _claim_lease(endpoint_id: int) -> bool:
    now = timezone.now()
    return bool(
        EventEndpoint.objects.filter(pk=endpoint_id)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=now + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS))
    )


def _renew_lease(endpoint_id: int) -> None:
    until = timezone.now() + timedelta(seconds=settings.WEBHOOK_LEASE_SECONDS)
    EventEndpoint.objects.filter(pk=endpoint_id).update(lease_until=until)


def _release_lease(endpoint_id: int) -> None:
    EventEndpoint.objects.filter(pk=endpoint_id).update(lease_until=None)


def _due(endpoint_id: int) -> OutboxEvent | None:
    return (
        OutboxEvent.objects.filter(endpoint_id=endpoint_id, state=OutboxEvent.State.PENDING)
        .order_by("sequence")
        .first()
    )


def event_ack(*, event: OutboxEvent, manual: bool, result_ok: bool, **attempt: Any) -> None:
    """Record one attempt; a success marks the event delivered (it is never sent again)."""
    with transaction.atomic(durable=True):
        DeliveryAttempt.objects.create(event=event, ok=result_ok, manual=manual, **attempt)
        if result_ok:
            OutboxEvent.objects.filter(pk=event.pk).update(
                state=OutboxEvent.State.DELIVERED,
                delivered_at=timezone.now(),
                attempts=F("attempts") + 1,
                last_error="",
            )


def _deliver_one(endpoint: EventEndpoint, event: OutboxEvent) -> float | None:
    """Send one event; None when the sender may go on, else the seconds to wait."""
    body = json.dumps(event.payload, separators=(",", ":"), sort_keys=True).encode()
    result = gated_post(
        endpoint.url,
        endpoint_id=endpoint.pk,
        secret=endpoint.secret,
        msg_id=event.webhook_id,
        body=body,
    )
    if isinstance(result, Deferred):
        return seconds_until(result.until)
    # The first try after someone asked for a redelivery is logged as theirs.
    manual = event.attempts == 0 and event.attempts_log.exists()
    event_ack(
        event=event,
        manual=manual,
        result_ok=result.ok,
        status_code=result.status_code,
        error=result.error,
        duration_ms=result.duration_ms,
    )
    if result.ok:
        return None
    now = timezone.now()
    attempts = event.attempts + 1
    deadline = event.deadline_at or now
    if result.retryable and now < deadline:
        wait = backoff_seconds(attempts)
        OutboxEvent.objects.filter(pk=event.pk).update(
            attempts=attempts,
            last_error=result.error,
            next_attempt_at=now + timedelta(seconds=wait),
        )
        return wait
    OutboxEvent.objects.filter(pk=event.pk).update(
        state=OutboxEvent.State.FAILED, attempts=attempts, last_error=result.error
    )
    return None  # a failed event no longer holds the line


def endpoint_deliver(*, endpoint_id: int) -> int:
    """Send the endpoint's pending events in sequence order; returns how many were sent."""
    sent = 0
    while _claim_lease(endpoint_id):
        retry_in: float | None = None
        try:
            endpoint = EventEndpoint.objects.filter(pk=endpoint_id, enabled=True).first()
            if endpoint is None:
                return sent
            while (event := _due(endpoint_id)) is not None:
                now = timezone.now()
                if event.next_attempt_at and event.next_attempt_at > now:
                    retry_in = (event.next_attempt_at - now).total_seconds()
                    break
                retry_in = _deliver_one(endpoint, event)
                if retry_in is not None:
                    break
                sent += 1
                _renew_lease(endpoint_id)
        finally:
            _release_lease(endpoint_id)
        if retry_in is not None:
            queue_job("bridges.endpoint_deliver", endpoint_id, countdown=retry_in)
            return sent
        # An event committed while we held the lease had its task turned away: look again.
        if _due(endpoint_id) is None:
            return sent
    return sent


def event_redeliver(*, event: OutboxEvent) -> OutboxEvent:
    """Send an event again (same webhook-id, so the receiver can tell it is a repeat)."""
    now = timezone.now()
    with transaction.atomic(durable=True):
        OutboxEvent.objects.filter(pk=event.pk).update(
            state=OutboxEvent.State.PENDING,
            next_attempt_at=None,
            attempts=0,
            last_error="",
            deadline_at=now + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS),
        )
        _deliver_on_commit(event.endpoint_id)
    event.refresh_from_db()
    return event


def endpoints_sweep() -> int:
    """Queue a sender for every endpoint with due events and no live sender (beat)."""
    now = timezone.now()
    due = (
        EventEndpoint.objects.filter(enabled=True)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        # A paused endpoint has its own job queued for when the pause ends.
        .exclude(delivery_target__paused_until__gt=now)
        .filter(
            Q(events__state=OutboxEvent.State.PENDING)
            & (Q(events__next_attempt_at__isnull=True) | Q(events__next_attempt_at__lte=now))
        )
        .values_list("pk", flat=True)
        .distinct()
    )
    ids = list(due)
    for endpoint_id in ids:
        queue_job("bridges.endpoint_deliver", endpoint_id)
    return len(ids)


# --- The receivers of the services' signals (run inside their transaction) ---------

_ACTIONS = {"undo": "undone", "restore": "restored"}


def memory_changed_event(
    sender: object,
    *,
    user_id: int,
    change_set_id: int,
    scope_id: int,
    origin: str,
    source: str,
    file_count: int,
    **_signal: object,
) -> None:
    """A change set was applied, undone (origin undo) or restored (origin restore)."""
    outbox_emit(
        user_id=user_id,
        event_type=MEMORY_CHANGED,
        data={
            "action": _ACTIONS.get(origin, "applied"),
            "change_set_id": change_set_id,
            "scope_id": scope_id,
            "origin": origin,
            "source": source,
            "file_count": file_count,
        },
    )


def proposal_created_event(
    sender: object,
    *,
    user_id: int,
    proposal_id: int,
    scope_id: int,
    action: str,
    source: str,
    **_signal: object,
) -> None:
    outbox_emit(
        user_id=user_id,
        event_type=PROPOSAL_CREATED,
        data={
            "proposal_id": proposal_id,
            "scope_id": scope_id,
            "action": action,
            "source": source,
        },
    )


def proposal_resolved_event(
    sender: object,
    *,
    user_id: int,
    proposal_id: int,
    state: str,
    change_set_id: int | None = None,
    **_signal: object,
) -> None:
    outbox_emit(
        user_id=user_id,
        event_type=PROPOSAL_RESOLVED,
        data={"proposal_id": proposal_id, "state": state, "change_set_id": change_set_id},
    )


def knowledge_indexed_event(
    sender: object,
    *,
    user_id: int,
    store_id: int,
    source_id: int,
    job_id: int,
    counts: dict[str, object],
    **_signal: object,
) -> None:
    outbox_emit(
        user_id=user_id,
        event_type=KNOWLEDGE_INDEXED,
        data={
            "store_id": store_id,
            "source_id": source_id,
            "job_id": job_id,
            "counts": {k: v for k, v in counts.items() if type(v) is int},
        },
    )
