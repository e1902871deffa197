from __future__ import annotations

import contextlib

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.db import transaction

from config.asgi import application
from host.push import push_fragment_on_commit

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1")


def _communicator(cookie: str | None = None) -> WebsocketCommunicator:
    headers = [ORIGIN, (b"host", b"127.0.0.1")]
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, "/ws/events/", headers=headers)


def _session_cookie(client, user) -> str:
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def test_anonymous_websocket_is_refused():
    async def scenario():
        communicator = _communicator()
        connected, code = await communicator.connect()
        await communicator.disconnect()
        return connected, code

    connected, code = async_to_sync(scenario)()
    assert connected is False
    assert code == 4401


def test_websocket_from_a_foreign_origin_is_refused(client, user):
    cookie = _session_cookie(client, user)

    async def scenario():
        communicator = WebsocketCommunicator(
            application,
            "/ws/events/",
            headers=[(b"origin", b"https://evil.example"), (b"cookie", cookie.encode())],
        )
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    assert async_to_sync(scenario)() is False


async def _connected(cookie: str) -> WebsocketCommunicator:
    communicator = _communicator(cookie)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


def test_signed_in_socket_receives_a_fragment_only_after_commit(client, user):
    cookie = _session_cookie(client, user)
    fragment = '<div id="inbox-count" hx-swap-oob="true">3</div>'
    in_transaction = transaction.atomic()

    def open_transaction_and_push():
        in_transaction.__enter__()
        push_fragment_on_commit(user.pk, fragment)

    def commit():
        in_transaction.__exit__(None, None, None)

    async def scenario():
        communicator = await _connected(cookie)
        try:
            await sync_to_async(open_transaction_and_push)()
            nothing_before_commit = await communicator.receive_nothing(timeout=0.3)
            await sync_to_async(commit)()
            return nothing_before_commit, await communicator.receive_from(timeout=5)
        finally:
            await communicator.disconnect()

    nothing_before_commit, received = async_to_sync(scenario)()
    assert nothing_before_commit
    assert received == fragment


def test_a_rolled_back_transaction_pushes_nothing(client, user):
    cookie = _session_cookie(client, user)

    def push_then_roll_back():
        with contextlib.suppress(RuntimeError), transaction.atomic():
            push_fragment_on_commit(user.pk, "<div id='x'>no</div>")
            raise RuntimeError("roll back")

    async def scenario():
        communicator = await _connected(cookie)
        try:
            await sync_to_async(push_then_roll_back)()
            return await communicator.receive_nothing(timeout=0.5)
        finally:
            await communicator.disconnect()

    assert async_to_sync(scenario)()


def test_a_user_does_not_receive_another_users_fragments(client, user, django_user_model):
    other = django_user_model.objects.create_user("other", password="x-pass-12345")
    cookie = _session_cookie(client, user)

    def push_to_other():
        with transaction.atomic():
            push_fragment_on_commit(other.pk, "<div id='secret'>theirs</div>")

    async def scenario():
        communicator = await _connected(cookie)
        try:
            await sync_to_async(push_to_other)()
            return await communicator.receive_nothing(timeout=0.5)
        finally:
            await communicator.disconnect()

    assert async_to_sync(scenario)()
