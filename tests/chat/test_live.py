"""Chat fragments reach the owner's sockets only."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from chat.runner import turn_run
from config.asgi import application
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def _socket(cookie: str) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application,
        "/ws/events/",
        headers=[
            (b"origin", b"http://127.0.0.1"),
            (b"host", b"127.0.0.1"),
            (b"cookie", cookie.encode()),
        ],
    )
    connected, _ = await communicator.connect()
    assert connected
    return communicator


def test_the_streamed_answer_reaches_the_owner_and_no_one_else(fake_openai, person, ask):
    fake_openai.chat_replies.append({"content": "Only for you."})
    answer = ask("Hi")
    owner_cookie = _cookie(person)
    stranger_cookie = _cookie(UserFactory())

    async def scenario():
        owner = await _socket(owner_cookie)
        stranger = await _socket(stranger_cookie)
        try:
            await sync_to_async(turn_run)(message_id=answer.pk)
            received = []
            while True:
                fragment = await owner.receive_from(timeout=5)
                received.append(fragment)
                if 'data-state="complete"' in fragment:
                    break
            return received, await stranger.receive_nothing(timeout=0.5)
        finally:
            await owner.disconnect()
            await stranger.disconnect()

    received, stranger_got_nothing = async_to_sync(scenario)()
    assert stranger_got_nothing
    assert any(f'id="message-{answer.pk}"' in fragment for fragment in received)
    assert "Only for you." in received[-1]
