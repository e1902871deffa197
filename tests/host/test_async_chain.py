"""Under ASGI a request runs the middleware on the event loop: it crosses into a thread
for Django's request signals and a synchronous view, not once or twice per middleware."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import pytest
from asgiref import sync
from asgiref.sync import async_to_sync
from django.conf import settings
from django.test import AsyncClient
from django.utils.module_loading import import_string

from accounts.services import api_token_create
from memory_addon.models import ChangeSet
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def crossings(monkeypatch) -> Iterator[Counter[str]]:
    """How often code crosses between the event loop and a thread."""
    counts: Counter[str] = Counter()
    into_thread = sync.SyncToAsync.__call__
    onto_loop = sync.AsyncToSync.__call__

    async def counted_into_thread(self, *args, **kwargs):
        counts["into a thread"] += 1
        return await into_thread(self, *args, **kwargs)

    def counted_onto_loop(self, *args, **kwargs):
        counts["onto the loop"] += 1
        return onto_loop(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted_into_thread)
    monkeypatch.setattr(sync.AsyncToSync, "__call__", counted_onto_loop)
    yield counts


def test_every_middleware_can_run_on_the_event_loop():
    # One synchronous-only middleware turns every one above it synchronous, with hops.
    blocking = [
        path
        for path in settings.MIDDLEWARE
        if not getattr(import_string(path), "async_capable", False)
    ]
    assert blocking == []


def test_a_token_api_request_crosses_into_a_thread_only_for_its_view(crossings):
    user = UserFactory()
    _, token = api_token_create(user=user, name="hops")
    client = AsyncClient()

    def post():
        return async_to_sync(client.post)(
            "/api/memory/turn-context",
            "{}",
            "application/json",
            headers={"Authorization": f"Bearer {token}"},
        )

    assert post().status_code == 200
    crossings.clear()

    response = post()

    assert response.status_code == 200
    # Into a thread for Django's request_started and request_finished handlers and for
    # the synchronous view; the one trip onto the loop is this test's own call. With one
    # synchronous-only middleware in the stack it was five and two.
    assert crossings == Counter({"into a thread": 3, "onto the loop": 1})


def test_a_keyed_write_through_the_async_chain_is_stored_once_and_replayed(user, scope):
    client = AsyncClient()
    async_to_sync(client.aforce_login)(user)
    post = async_to_sync(client.post)

    def add():
        return post(
            f"/api/memory/scopes/{scope.pk}/notes",
            json.dumps({"text": "likes green tea"}),
            content_type="application/json",
            headers={"Idempotency-Key": "async-1"},
        )

    first, again = add(), add()

    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert ChangeSet.objects.filter(scope=scope).count() == 1


def test_a_sign_in_through_the_async_chain_keeps_its_session(user):
    user.set_password("a long enough password")
    user.save()
    client = AsyncClient()
    post, get = async_to_sync(client.post), async_to_sync(client.get)

    signed_in = post(
        "/accounts/sign-in/", {"username": user.username, "password": "a long enough password"}
    )

    assert signed_in.status_code == 302
    assert settings.SESSION_COOKIE_NAME in signed_in.cookies
    page = get("/memory/")
    assert page.status_code == 200
    assert "no-store" in page["Cache-Control"]


def test_a_form_without_its_csrf_token_is_refused_through_the_async_chain(user):
    client = AsyncClient(enforce_csrf_checks=True)
    async_to_sync(client.aforce_login)(user)

    refused = async_to_sync(client.post)("/memory/", {"text": "no token"})

    assert refused.status_code == 403
