"""Outgoing events: written with the change, delivered in order, signed, logged, redelivered."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from bridges.models import EventEndpoint, OutboxEvent
from bridges.outbox import endpoint_deliver
from bridges.services import endpoint_create
from memory_addon.models import ChangeSet, Proposal
from memory_addon.services.changes import FileWrite, change_set_apply, change_set_undo, file_write
from memory_addon.services.proposals import memory_change_request, proposal_reject
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from scripts.sample_bridge import CallbackReceiver
from tests.conftest import ROOT, child_env
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
ALL_TYPES = [t.value for t in EventEndpoint.EventType]


@pytest.fixture
def person():
    return UserFactory()


@pytest.fixture
def endpoint(person, receiver_events):
    row, secret = endpoint_create(owner=person, url=receiver_events.url, event_types=ALL_TYPES)
    receiver_events.secrets.append(secret)
    return row


@pytest.fixture
def receiver_events():
    server = CallbackReceiver([]).start()
    yield server
    server.stop()


def write(person, text: str, base: str = "") -> ChangeSet:
    return file_write(
        user=person,
        scope=ensure_user_scope(person),
        path="notes.md",
        content=text,
        base_sha256=base,
    )


def test_a_rolled_back_change_emits_nothing_and_a_committed_one_emits_one(person, endpoint):
    scope = ensure_user_scope(person)
    with pytest.raises(RuntimeError), transaction.atomic():
        change_set_apply(
            user=person,
            scope=scope,
            writes=[FileWrite("notes.md", "- rolled back\n")],
            origin=ChangeSet.Origin.PERSON,
            source=ChangeSet.Source.PAGE,
            machine=False,
        )
        assert OutboxEvent.objects.count() == 1  # written inside the transaction …
        raise RuntimeError("the change fails after its event was written")
    assert OutboxEvent.objects.count() == 0  # … and gone with it
    change = write(person, "- kept\n")
    (event,) = OutboxEvent.objects.all()
    assert event.event_type == "memory.changed"
    assert event.payload["data"]["change_set_id"] == change.pk
    assert event.payload["data"]["action"] == "applied"
    assert event.payload["data"]["file_count"] == 1


def _auto_save(person, text: str, message_ref: str):
    turn = Turn(user=person, conversation_ref="c", message_ref=message_ref, reply_ref_trusted=True)
    return memory_change_request(turn=turn, operation={"action": "add", "text": text})


def test_an_automatic_save_writes_its_event_in_its_own_transaction(person, endpoint, monkeypatch):
    """The save reads the person's endpoints once (with their stored secrets), and the
    event is still written inside the save's transaction: gone when the save rolls back."""
    from addons.services import addon_setting_put
    from memory_addon.services import changes

    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    events_before_commit = []

    def fail_after_the_event(scope_id: int) -> None:  # runs after the outbox's receiver
        events_before_commit.append(OutboxEvent.objects.count())
        raise RuntimeError("the save fails after its event was written")

    monkeypatch.setattr(changes, "note_embeddings_refresh_on_commit", fail_after_the_event)
    with pytest.raises(RuntimeError):
        _auto_save(person, "- pet: a cat named Tom", "m1")
    assert events_before_commit == [1]  # written inside the transaction …
    assert OutboxEvent.objects.count() == 0  # … and gone with it
    assert not ChangeSet.objects.filter(user=person).exists()

    monkeypatch.undo()
    saved = _auto_save(person, "- pet: a cat named Tom", "m2")
    (event,) = OutboxEvent.objects.all()
    assert saved.kind == "saved"
    assert event.endpoint_id == endpoint.pk and event.event_type == "memory.changed"
    assert event.payload["data"]["change_set_id"] == saved.change_set.pk


def test_an_endpoint_registered_after_a_save_hears_the_next_one(person, receiver_events):
    from addons.services import addon_setting_put

    addon_setting_put(user=person, addon="memory", key="save-mode", value="auto")
    assert _auto_save(person, "- pet: a cat named Tom", "m1").kind == "saved"
    assert OutboxEvent.objects.count() == 0  # nobody listened yet
    row, _secret = endpoint_create(owner=person, url=receiver_events.url, event_types=ALL_TYPES)
    saved = _auto_save(person, "- tea: likes green tea", "m2")
    (event,) = OutboxEvent.objects.all()
    assert event.endpoint_id == row.pk
    assert event.payload["data"]["change_set_id"] == saved.change_set.pk


def test_events_are_signed_and_carry_no_note_text(person, endpoint, receiver_events):
    change = write(person, "- my bank is Sparkasse Nord\n")
    change_set_undo(user=person, change_set=change)
    turn = Turn(user=person, conversation_ref="c", message_ref="m", reply_ref_trusted=True)
    outcome = memory_change_request(
        turn=turn,
        operation={"scope": "user", "action": "add", "text": "- pet: a cat named Tom"},
        reason="remember the pet",
    )
    proposal_reject(user=person, proposal=Proposal.objects.get(pk=outcome.proposal.pk))
    assert endpoint_deliver(endpoint_id=endpoint.pk) == 4
    assert receiver_events.wait_for(4)
    types = [
        (e["type"], e["data"].get("action") or e["data"].get("state"))
        for e in receiver_events.received
    ]
    assert types == [
        ("memory.changed", "applied"),
        ("memory.changed", "undone"),
        ("proposal.created", "add"),
        ("proposal.resolved", "rejected"),
    ]
    everything = json.dumps(receiver_events.received)
    assert "Sparkasse" not in everything and "Tom" not in everything
    assert "remember the pet" not in everything and "notes.md" not in everything
    assert receiver_events.rejected == 0
    assert [e["sequence"] for e in receiver_events.received] == [1, 2, 3, 4]


def test_an_organization_endpoint_gets_its_members_events_and_others_get_none(
    person, receiver_events
):
    from accounts.models import Membership
    from tests.factories import OrganizationFactory

    organization = OrganizationFactory()
    admin = UserFactory()
    Membership.objects.create(organization=organization, user=admin, role="admin")
    Membership.objects.create(organization=organization, user=person)
    row, _ = endpoint_create(
        owner=admin,
        url=receiver_events.url,
        event_types=["memory.changed"],
        organization=organization,
    )
    write(person, "- member's change\n")
    write(UserFactory(), "- outsider's change\n")
    assert OutboxEvent.objects.filter(endpoint=row).count() == 1


def test_a_sender_killed_between_delivery_and_acknowledgement_redelivers_once_with_the_same_id(
    person, endpoint, receiver_events
):
    write(person, "- one\n")
    (event,) = OutboxEvent.objects.all()
    # A real process dies right after the POST, before it records the acknowledgement.
    script = (
        "import os, django; django.setup()\n"
        "from bridges import outbox\n"
        "outbox.event_ack = lambda **kw: os._exit(9)\n"
        f"outbox.endpoint_deliver(endpoint_id={endpoint.pk})\n"
    )
    connection.close()
    child = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=child_env(WEBHOOK_LEASE_SECONDS="1"),
        timeout=120,
        check=False,
    )
    assert child.returncode == 9
    assert receiver_events.wait_for(1)
    event.refresh_from_db()
    assert event.state == OutboxEvent.State.PENDING
    # While the dead sender's lease lasts nobody sends; once it ran out, one redelivery.
    deadline = time.monotonic() + 10
    while EventEndpoint.objects.get(pk=endpoint.pk).lease_until > timezone.now():
        assert endpoint_deliver(endpoint_id=endpoint.pk) == 0
        assert time.monotonic() < deadline
    assert endpoint_deliver(endpoint_id=endpoint.pk) == 1
    assert endpoint_deliver(endpoint_id=endpoint.pk) == 0
    assert receiver_events.ids == [event.webhook_id, event.webhook_id]
    event.refresh_from_db()
    assert event.state == OutboxEvent.State.DELIVERED


def test_redelivery_from_the_page_sends_the_same_webhook_id_and_logs_it(
    person, endpoint, receiver_events
):
    write(person, "- one\n")
    endpoint_deliver(endpoint_id=endpoint.pk)
    (event,) = OutboxEvent.objects.all()
    client = Client()
    client.force_login(person)
    assert client.post(f"/bridges/events/log/{event.pk}/redeliver/").status_code == 302
    endpoint_deliver(endpoint_id=endpoint.pk)
    assert receiver_events.wait_for(2)
    assert receiver_events.ids == [event.webhook_id, event.webhook_id]
    assert [a.manual for a in event.attempts_log.order_by("id")] == [False, True]
    page = client.get("/bridges/events/")
    assert event.webhook_id in page.content.decode() and "redelivery" in page.content.decode()
    stranger = Client()
    stranger.force_login(UserFactory())
    assert stranger.post(f"/bridges/events/log/{event.pk}/redeliver/").status_code == 404
    assert stranger.post(f"/bridges/events/{endpoint.pk}/delete/").status_code == 404


def test_a_failing_endpoint_is_retried_with_backoff_and_keeps_the_order(
    person, endpoint, receiver_events, settings
):
    settings.WEBHOOK_RETRY_BASE_SECONDS = 0.05
    settings.WEBHOOK_RETRY_MAX_SECONDS = 0.1
    receiver_events.status = 503
    write(person, "- one\n")
    write(person, "- two\n", base=_sha(person))
    assert endpoint_deliver(endpoint_id=endpoint.pk) == 0
    first = OutboxEvent.objects.get(sequence=1)
    assert first.attempts == 1 and "503" in first.last_error and first.next_attempt_at
    receiver_events.status = 200
    deadline = time.monotonic() + 10
    while OutboxEvent.objects.filter(state="pending").exists():
        endpoint_deliver(endpoint_id=endpoint.pk)
        assert time.monotonic() < deadline
    assert [e["sequence"] for e in receiver_events.received] == [1, 2]


# Enough for two competing senders per endpoint to interleave many times; a thousand
# took minutes on a busy machine and proved no more.
CHANGES = 300


def _sha(person) -> str:
    return ensure_user_scope(person).files.get(path="notes.md").sha256


def test_hundreds_of_changes_arrive_in_order_per_endpoint(person, receiver_events):
    second = CallbackReceiver([]).start()
    try:
        endpoints = []
        for server in (receiver_events, second):
            row, secret = endpoint_create(
                owner=person, url=server.url, event_types=["memory.changed"]
            )
            server.secrets.append(secret)
            endpoints.append(row)
        base = ""
        for number in range(CHANGES):
            base = write(person, f"- change {number}\n", base=base).changes.get().after_sha256
        # Two competing senders per endpoint: the lease keeps one at a time, in order.
        threads = [
            threading.Thread(target=_deliver_and_close, args=(row.pk,))
            for row in endpoints
            for _ in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        for server in (receiver_events, second):
            assert server.wait_for(CHANGES, timeout=60)
            sequences = [event["sequence"] for event in server.received]
            assert sequences == list(range(1, CHANGES + 1))
            change_ids = [event["data"]["change_set_id"] for event in server.received]
            assert change_ids == sorted(change_ids)
            assert server.rejected == 0
    finally:
        second.stop()


def _deliver_and_close(endpoint_id: int) -> None:
    try:
        while OutboxEvent.objects.filter(endpoint_id=endpoint_id, state="pending").exists():
            endpoint_deliver(endpoint_id=endpoint_id)
    finally:
        connection.close()
