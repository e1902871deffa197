"""A job's live progress reaches everyone who may read the collection, over their real
sockets, and a reader's fragment offers no control a reader may not use; the audience is
the one access rule seen from the collection's side."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import connections
from django.test import Client

from accounts.models import User
from config.asgi import application
from host.push import push_fragment
from knowledge import selectors, services
from knowledge.models import Job
from knowledge.services import jobs
from tests.knowledge.test_sharing import MANAGERS, READERS, ROLES, shared_world

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]
WATCHERS = ("owner", "named_reader", "org_member", "stranger")


def _cookie(person: User) -> bytes:
    client = Client()  # one each: logging another person in ends the previous session
    client.force_login(person)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


def _in_thread(change: Callable[[], object]) -> None:
    try:
        change()
    finally:
        connections.close_all()  # this thread's connection, or the test database stays busy


def _received(people: dict[str, User], change) -> dict[str, list[str]]:
    """What each person's open socket got from `change`; a marker pushed to each one
    afterwards ends its list (no waiting for a timeout to prove that nothing came)."""
    cookies = {name: _cookie(person) for name, person in people.items()}

    async def scenario() -> dict[str, list[str]]:
        sockets = {
            name: WebsocketCommunicator(
                application, "/ws/events/", headers=[*HEADERS, (b"cookie", cookie)]
            )
            for name, cookie in cookies.items()
        }
        for socket in sockets.values():
            assert (await socket.connect())[0]
        try:
            await asyncio.to_thread(_in_thread, change)
            got: dict[str, list[str]] = {}
            for name, socket in sockets.items():
                await asyncio.to_thread(push_fragment, people[name].pk, '<i id="end"></i>')
                got[name] = []
                while 'id="end"' not in (text := await socket.receive_from(timeout=10)):
                    got[name].append(text)
            return got
        finally:
            for socket in sockets.values():
                await socket.disconnect()

    return async_to_sync(scenario)()


def test_job_progress_reaches_named_readers_and_org_members_not_strangers():
    world = shared_world()
    Job.objects.filter(pk=world.job.pk).update(state=Job.State.SUCCEEDED)
    job = Job.objects.create(
        store=world.store, source=world.source, kind=Job.Kind.INDEX, state=Job.State.RUNNING
    )
    people = {name: world.people[name] for name in WATCHERS}

    got = _received(people, lambda: jobs._beat(job, progress=42))

    for name in ("owner", "named_reader", "org_member"):
        (fragment,) = got[name]
        assert f"job-status-{world.store.pk}" in fragment and "42%" in fragment
    assert got["stranger"] == []
    assert "/cancel/" in got["owner"][0]
    for reader in ("named_reader", "org_member"):
        assert "/cancel/" not in got[reader][0]


def test_a_settled_scan_shows_readers_the_review_without_its_buttons():
    world = shared_world()
    Job.objects.filter(pk=world.job.pk).update(state=Job.State.SUCCEEDED)
    job = Job.objects.create(
        store=world.store, source=world.source, kind=Job.Kind.SCAN, state=Job.State.RUNNING
    )
    people = {name: world.people[name] for name in ("owner", "named_reader")}

    got = _received(people, lambda: jobs._finish(job, Job.State.REVIEW))

    owner, reader = got["owner"][0], got["named_reader"][0]
    assert f"review-slot-{world.store.pk}" in owner and f"review-slot-{world.store.pk}" in reader
    assert "/confirm/" in owner and "/update/" in owner
    assert "/confirm/" not in reader and "/dismiss/" not in reader and "/update/" not in reader


@pytest.mark.parametrize("with_organization", [True, False])
def test_the_push_audience_is_exactly_who_may_read_and_manage(with_organization):
    world = shared_world()
    if not with_organization:
        services.store_share_set(
            store=world.store,
            actor=world.people["owner"],
            organization_id=None,
            readers=[world.people["named_reader"].pk],
            managers=[world.people["named_manager"].pk],
        )
    audience = selectors.store_audience(world.store)
    for role in ROLES:
        person = world.people[role]
        may_read = selectors.stores_readable_by(person).filter(pk=world.store.pk).exists()
        may_manage = may_read and selectors.store_managed_by(person, world.store)
        assert (person.pk in audience.managers) == may_manage, role
        assert (person.pk in audience.readers) == (may_read and not may_manage), role
    if with_organization:  # the rule's own table in test_sharing, as a second check
        everyone = audience.readers | audience.managers
        assert {r for r in ROLES if world.people[r].pk in everyone} == READERS
        assert {r for r in ROLES if world.people[r].pk in audience.managers} == MANAGERS


def test_the_status_a_reopened_page_fetches_offers_cancel_to_managers_only():
    world = shared_world()
    Job.objects.filter(pk=world.job.pk).update(state=Job.State.SUCCEEDED)
    job = Job.objects.create(
        store=world.store, source=world.source, kind=Job.Kind.INDEX, state=Job.State.RUNNING
    )
    pages = {}
    for role in ("owner", "named_manager", "named_reader", "org_member"):
        client = Client()
        client.force_login(world.people[role])
        answer = client.get(f"/knowledge/jobs/{job.pk}/")
        assert answer.status_code == 200
        pages[role] = answer.content.decode()
    assert "/cancel/" in pages["owner"] and "/cancel/" in pages["named_manager"]
    assert "/cancel/" not in pages["named_reader"] and "/cancel/" not in pages["org_member"]
