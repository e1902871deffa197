"""Issue 14 item 13: Redis failing under the live socket drops it cleanly; the page reconnects
and shows what it missed."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest
from channels.layers import get_channel_layer
from redis.exceptions import TimeoutError as RedisTimeoutError

from host.consumers import EventsConsumer
from memory_addon.services.proposals import memory_change_request
from memory_addon.turns import Turn
from tests.conftest import off_loop, wait_until_live
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


class RedisGoesAway:
    """The layer's receive as under a failing Redis: the first calls wait for the test's
    signal, then time out, as often as the consumer retries; later calls are real."""

    def __init__(self, layer, failures: int) -> None:
        self.real = layer.receive
        self.failures = failures
        self.raised = 0
        self.fail_now = threading.Event()

    async def __call__(self, channel: str):
        if self.raised >= self.failures:
            return await self.real(channel)
        while not self.fail_now.is_set():
            await asyncio.sleep(0.02)
        self.raised += 1
        raise RedisTimeoutError("Timeout reading from /tmp/redis.socket")


def test_a_socket_dropped_by_redis_errors_reconnects_and_resyncs(
    sign_in, monkeypatch, caplog, screenshot
):
    person = UserFactory()
    layer = get_channel_layer()
    delays = (0.01, 0.02, 0.04)
    monkeypatch.setattr(EventsConsumer, "retry_delays", delays)
    failing = RedisGoesAway(layer, failures=len(delays) + 1)
    monkeypatch.setattr(layer, "receive", failing)
    page = sign_in(person)
    with caplog.at_level(logging.INFO):
        page.goto("/inbox/")
        wait_until_live(page)
        # Pushed while the socket's consumer cannot read from Redis: this push is lost.
        proposal = off_loop(
            memory_change_request,
            turn=Turn(user=person),
            operation={"action": "add", "text": "- desk: works standing up -> desk.md"},
            reason="Said in a chat.",
        ).proposal
        failing.fail_now.set()
        page.locator("body[data-resynced='1']").wait_for(state="attached")
        page.locator(f"#proposal-{proposal.pk}").wait_for()
        wait_until_live(page)
    screenshot("resynced")
    assert failing.raised == len(delays) + 1
    assert "closing the socket so the page reconnects" in caplog.text
    assert "Exception in ASGI application" not in caplog.text
