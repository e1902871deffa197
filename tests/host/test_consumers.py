"""Live events under Redis errors: the socket outlives a hiccup and closes cleanly when Redis
stays away; a push that cannot reach Redis is dropped within its bound, never an error."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from config.asgi import application
from host import push
from host.consumers import CLOSE_REDIS_LOST, EventsConsumer
from host.push import push_fragment, user_group

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def _cookie(client, user) -> bytes:
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    return f"{settings.SESSION_COOKIE_NAME}={session}".encode()


class FlakyReceive:
    """The real layer's receive, failing the first `failures` calls as a loaded Redis does."""

    def __init__(self, layer, failures: int | None, error: Exception) -> None:
        self.real = layer.receive
        self.failures = failures
        self.error = error
        self.raised = 0

    async def __call__(self, channel: str):
        if self.failures is None or self.raised < self.failures:
            self.raised += 1
            raise self.error
        return await self.real(channel)


def test_a_redis_timeout_in_the_layer_does_not_drop_the_socket(client, user, monkeypatch, caplog):
    layer = get_channel_layer()
    flaky = FlakyReceive(layer, 1, RedisTimeoutError("Timeout reading from /tmp/redis.socket"))
    monkeypatch.setattr(layer, "receive", flaky)
    cookie = _cookie(client, user)
    fragment = '<div id="inbox-count" hx-swap-oob="true">7</div>'

    async def scenario():
        communicator = WebsocketCommunicator(
            application, "/ws/events/", headers=[*HEADERS, (b"cookie", cookie)]
        )
        connected, _ = await communicator.connect()
        assert connected
        try:
            deadline = asyncio.get_running_loop().time() + 5
            while flaky.raised == 0:
                assert asyncio.get_running_loop().time() < deadline, "receive never called"
                await asyncio.sleep(0.01)
            await layer.group_send(user_group(user.pk), {"type": "fragment", "html": fragment})
            return await communicator.receive_from(timeout=5)
        finally:
            await communicator.disconnect()

    with caplog.at_level(logging.INFO, logger="host.consumers"):
        received = async_to_sync(scenario)()
    assert flaky.raised == 1
    assert received == fragment
    assert "transient Redis error" in caplog.text


def test_a_redis_that_stays_away_closes_the_socket_for_a_reconnect(
    client, user, monkeypatch, caplog
):
    layer = get_channel_layer()
    flaky = FlakyReceive(layer, None, RedisConnectionError("Connection refused"))
    monkeypatch.setattr(layer, "receive", flaky)
    monkeypatch.setattr(EventsConsumer, "retry_delays", (0.01, 0.02, 0.04))
    cookie = _cookie(client, user)

    async def scenario():
        communicator = WebsocketCommunicator(
            application, "/ws/events/", headers=[*HEADERS, (b"cookie", cookie)]
        )
        connected, _ = await communicator.connect()
        assert connected
        closed = await communicator.receive_output(timeout=5)
        # disconnect() re-raises anything the application raised: nothing may escape.
        await communicator.disconnect()
        return closed

    with caplog.at_level(logging.WARNING):
        closed = async_to_sync(scenario)()
    assert closed == {"type": "websocket.close", "code": CLOSE_REDIS_LOST}
    assert flaky.raised == 4  # the first try and one per pause, then no more
    assert "closing the socket so the page reconnects" in caplog.text
    assert "Exception in ASGI application" not in caplog.text


def test_a_socket_that_cannot_join_its_group_is_closed_for_a_retry(client, user, monkeypatch):
    layer = get_channel_layer()

    async def unreachable(group: str, channel: str) -> None:
        raise RedisConnectionError("Connection refused")

    monkeypatch.setattr(layer, "group_add", unreachable)
    cookie = _cookie(client, user)

    async def scenario():
        communicator = WebsocketCommunicator(
            application, "/ws/events/", headers=[*HEADERS, (b"cookie", cookie)]
        )
        result = await communicator.connect()
        await communicator.disconnect()
        return result

    assert async_to_sync(scenario)() == (False, 1013)


async def _someone_listens(layer, group: str) -> bool:
    return True


def _failing_step(monkeypatch, step: str, failure) -> None:
    """The listener check and the send each talk to Redis; either may fail."""
    if step == "send":
        monkeypatch.setattr(push, "_has_listeners", _someone_listens)
        monkeypatch.setattr(get_channel_layer(), "group_send", failure)
    else:
        monkeypatch.setattr(push, "_has_listeners", failure)


@pytest.mark.parametrize("step", ["listener check", "send"])
def test_a_push_redis_refuses_is_dropped_not_raised(monkeypatch, caplog, step):
    async def refused(*args) -> None:
        raise RedisConnectionError("Connection refused")

    _failing_step(monkeypatch, step, refused)
    with caplog.at_level(logging.WARNING, logger="host.push"):
        push_fragment(1, "<div id='x'>1</div>")
    assert "Live push to user 1 dropped" in caplog.text


@pytest.mark.parametrize("step", ["listener check", "send"])
def test_a_push_to_a_hanging_redis_gives_up_within_its_bound(monkeypatch, caplog, step):
    async def hangs(*args) -> None:
        await asyncio.sleep(60)

    _failing_step(monkeypatch, step, hangs)
    monkeypatch.setattr(push, "PUSH_TIMEOUT_SECONDS", 0.2)
    begin = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="host.push"):
        push_fragment(1, "<div id='x'>1</div>")
    assert time.monotonic() - begin < 5
    assert "Live push to user 1 dropped" in caplog.text
