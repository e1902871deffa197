"""Reads of the bridges pages: one access selector per resource, owner-checked."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404

from accounts import crypto
from accounts.models import Membership, MessagingBinding, User
from bridges.models import DeliveryAttempt, EventEndpoint, InboundMessage, OutboxEvent
from host.compiled import CompiledQuery
from host.read_once import read_once

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


@dataclass(frozen=True)
class PersonEndpoint:
    """An endpoint that concerns one person: registered by them, or one of their
    organization's."""

    pk: int
    own: bool  # the person registered it: its signing secret is one they keep here
    secret_encrypted: str
    hears: frozenset[str]  # the event types it receives of this person's changes


def person_endpoints(user_id: int) -> tuple[PersonEndpoint, ...]:
    """The person's own endpoints and their organizations' ones, newest first: one query,
    made once inside `reads_once()` for both the secret check and the outbox."""
    return read_once(("bridges.person_endpoints", user_id), lambda: _person_endpoints(user_id))


# pk, owner, organization, enabled, event types (jsonb text), secret, member, owner is admin
_EndpointRow = tuple[int, int, int | None, bool, str, str, bool, bool]


def _person_endpoints_query(user_id: int) -> QuerySet[EventEndpoint, _EndpointRow]:
    # An organization's endpoint hears its members only while whoever registered it is
    # still an admin there: a removed admin's endpoint goes quiet.
    owner_is_admin = Exists(
        Membership.objects.filter(
            organization_id=OuterRef("organization_id"), user_id=OuterRef("owner_id"), role="admin"
        )
    )
    member = Exists(
        Membership.objects.filter(organization_id=OuterRef("organization_id"), user_id=user_id)
    )
    return (
        EventEndpoint.objects.annotate(member=member, owner_is_admin=owner_is_admin)
        .filter(Q(owner_id=user_id) | Q(member=True))
        .order_by("-created_at", "-id")
        .values_list(
            "pk",
            "owner_id",
            "organization_id",
            "enabled",
            "event_types",
            "secret_encrypted",
            "member",
            "owner_is_admin",
        )
    )


# Read on every memory write (B4): compiled once per process.
_PERSON_ENDPOINTS = CompiledQuery(_person_endpoints_query, "user_id")


def _person_endpoints(user_id: int) -> tuple[PersonEndpoint, ...]:
    endpoints = []
    for (
        pk,
        owner_id,
        organization_id,
        enabled,
        types,
        secret,
        is_member,
        admin,
    ) in _PERSON_ENDPOINTS.rows(user_id=user_id):
        personal = owner_id == user_id and organization_id is None
        heard = enabled and (personal or (is_member and admin))
        listed = json.loads(types) if isinstance(types, str) else types
        endpoints.append(
            PersonEndpoint(
                pk=pk,
                own=owner_id == user_id,
                secret_encrypted=secret,
                hears=frozenset(str(t) for t in listed or ()) if heard else frozenset(),
            )
        )
    return tuple(endpoints)


def endpoint_secrets_of(user_id: int) -> list[str]:
    """The signing secrets of a person's event endpoints (the host stores them for them)."""
    return [
        crypto.decrypt(endpoint.secret_encrypted)
        for endpoint in person_endpoints(user_id)
        if endpoint.own and endpoint.secret_encrypted
    ]
