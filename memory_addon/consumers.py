from __future__ import annotations

import asyncio

from channels.generic.websocket import AsyncWebsocketConsumer

from memory_addon import metrics
from memory_addon.events import FragmentEvent, user_group


class EventsConsumer(AsyncWebsocketConsumer):
    """One socket per open page; it receives fragments meant for its user only."""

    group: str | None = None
    counted = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.group = user_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.counted = True
        await asyncio.to_thread(metrics.websockets_changed, 1)

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if self.counted:
            self.counted = False
            await asyncio.to_thread(metrics.websockets_changed, -1)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # The socket is one-way; anything a client sends is ignored.
        return

    async def fragment(self, event: FragmentEvent) -> None:
        await self.send(text_data=event["html"])
