from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import translation
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from host import metrics
from host.push import FragmentEvent, user_group

logger = logging.getLogger(__name__)

# Errors of a Redis that is restarting, overloaded or briefly unreachable: worth a retry.
TRANSIENT_REDIS_ERRORS: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    RedisTimeoutError,
    ConnectionError,
    TimeoutError,  # also what asyncio.wait_for raises when its bound runs out
)
# Pauses between tries of the layer's receive (seconds): about 3.5 s in all, then the
# socket closes and the page reconnects and resyncs on its own.
RECEIVE_RETRY_DELAYS = (0.1, 0.2, 0.4, 0.8, 2.0)
# A group_add / group_discard that cannot reach Redis must not hold a socket forever.
GROUP_TIMEOUT_SECONDS = 5.0
# 1012 "service restart": htmx's ws extension reconnects after it (as after 1006/1011/1013),
# and static/js/live.js then fetches the page's main part again.
CLOSE_REDIS_LOST = 1012
CLOSE_TRY_AGAIN = 1013
LAYER_LOST = "layer.lost"


class _Handshake:
    """What Django's language choice reads of a request, taken from the socket's handshake."""

    def __init__(self, scope: dict[str, Any]) -> None:
        self.COOKIES: dict[str, str] = dict(scope.get("cookies") or {})
        headers = dict(scope.get("headers") or [])
        accept = headers.get(b"accept-language", b"").decode("latin-1")
        self.META = {"HTTP_ACCEPT_LANGUAGE": accept} if accept else {}
        self.path_info = scope.get("path", "/")


def page_language(scope: dict[str, Any]) -> str:
    """The language the socket's page was shown in: the same rule as LocaleMiddleware's."""
    return translation.get_language_from_request(_Handshake(scope))  # type: ignore[arg-type]


class EventsConsumer(AsyncWebsocketConsumer):
    """One socket per open page; it receives fragments meant for its user only."""

    group: str | None = None
    language = ""
    counted = False
    retry_delays: tuple[float, ...] = RECEIVE_RETRY_DELAYS
    _layer_receive: Callable[[], Awaitable[dict[str, Any]]] | None = None
    _layer_lost = False

    # channels' AsyncConsumer.__call__ assigns the layer's receive to channel_receive
    # and awaits it in await_many_dispatch, where any exception ends the whole ASGI
    # application ("Exception in ASGI application") and drops the page's socket. The
    # property keeps channels' loop as it is and puts the retry around the receive.
    @property
    def channel_receive(self) -> Callable[[], Awaitable[dict[str, Any]]]:
        return self._receive_from_layer

    @channel_receive.setter
    def channel_receive(self, receive: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        self._layer_receive = receive

    async def _receive_from_layer(self) -> dict[str, Any]:
        receive = self._layer_receive
        while receive is None or self._layer_lost:
            # The close is under way; the dispatch loop still waits on this side.
            await asyncio.Event().wait()
        attempt = 0
        while True:
            try:
                return await receive()
            except TRANSIENT_REDIS_ERRORS as error:
                if attempt >= len(self.retry_delays):
                    logger.warning(
                        "Live events: Redis still failing after %d tries (%s); closing the "
                        "socket so the page reconnects",
                        attempt + 1,
                        error,
                    )
                    self._layer_lost = True
                    return {"type": LAYER_LOST}
                logger.info("Live events: transient Redis error (%s); retrying", error)
                await asyncio.sleep(self.retry_delays[attempt])
                attempt += 1

    async def layer_lost(self, event: dict[str, Any]) -> None:
        await self.close(code=CLOSE_REDIS_LOST)

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        group = user_group(user.pk)
        try:
            await asyncio.wait_for(
                self.channel_layer.group_add(group, self.channel_name), GROUP_TIMEOUT_SECONDS
            )
        except TRANSIENT_REDIS_ERRORS as error:
            logger.warning("Live events: cannot join the user's group (%s)", error)
            await self.close(code=CLOSE_TRY_AGAIN)
            return
        self.group = group
        self.language = page_language(self.scope)
        await self.accept()
        self.counted = True
        await asyncio.to_thread(metrics.websockets_changed, 1)

    async def disconnect(self, code: int) -> None:
        if self.group:
            group, self.group = self.group, None
            try:
                await asyncio.wait_for(
                    self.channel_layer.group_discard(group, self.channel_name),
                    GROUP_TIMEOUT_SECONDS,
                )
            except TRANSIENT_REDIS_ERRORS as error:
                # The group membership expires on its own (channels_redis group_expiry).
                logger.info("Live events: could not leave the group (%s)", error)
        if self.counted:
            self.counted = False
            await asyncio.to_thread(metrics.websockets_changed, -1)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # The socket is one-way; anything a client sends is ignored.
        return

    async def fragment(self, event: FragmentEvent) -> None:
        html = event.get("by_language", {}).get(self.language) or event["html"]
        await self.send(text_data=html)
