"""Reads of the bridges pages: one access selector per resource, owner-checked."""

from __future__ import annotations

from django.db.models import Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts import crypto
from accounts.models import MessagingBinding, User
from bridges.models import DeliveryAttempt, EventEndpoint, InboundMessage, OutboxEvent

RECENT_DELIVERIES = 10
RECENT_EVENTS = 20


def bindings_for(owner: User) -> QuerySet[MessagingBinding]:
    return (
        MessagingBinding.objects.filter(owner=owner, deleted_at__isnull=True)
        .select_related("agent", "ai_profile", "delivery_target")
        .order_by("-created_at", "-id")
    )


def binding_for(owner: User, binding_id: int) -> MessagingBinding:
    """The person's own live binding, or 404 (a foreign id looks like a missing one)."""
    return get_object_or_404(MessagingBinding, pk=binding_id, owner=owner, deleted_at__isnull=True)


def deliveries_for(binding: MessagingBinding) -> list[InboundMessage]:
    return list(binding.inbound_messages.order_by("-received_at", "-id")[:RECENT_DELIVERIES])


def endpoints_for(owner: User) -> QuerySet[EventEndpoint]:
    """Endpoints the person registered, and their organization's ones if they are an admin."""
    admin_of = Q(organization__membership__user=owner, organization__membership__role="admin")
    return (
        EventEndpoint.objects.filter(Q(owner=owner) | admin_of)
        .select_related("organization", "delivery_target")
        .distinct()
        .order_by("-created_at", "-id")
    )


def endpoint_for(owner: User, endpoint_id: int) -> EventEndpoint:
    return get_object_or_404(endpoints_for(owner), pk=endpoint_id)


def event_for(owner: User, event_id: int) -> OutboxEvent:
    return get_object_or_404(
        OutboxEvent.objects.select_related("endpoint"),
        pk=event_id,
        endpoint__in=endpoints_for(owner),
    )


def recent_events(endpoint: EventEndpoint) -> list[OutboxEvent]:
    attempts = DeliveryAttempt.objects.order_by("-attempted_at", "-id")
    return list(
        endpoint.events.order_by("-sequence").prefetch_related(
            Prefetch("attempts_log", queryset=attempts, to_attr="log")
        )[:RECENT_EVENTS]
    )


def endpoint_secrets_of(user_id: int) -> list[str]:
    """The signing secrets of a person's event endpoints (the host stores them for them)."""
    return [
        crypto.decrypt(value)
        for value in EventEndpoint.objects.filter(owner_id=user_id).values_list(
            "secret_encrypted", flat=True
        )
        if value
    ]
