"""The Redis channel layer, kept alive through short Redis outages.

Every socket of a web process shares one receive loop; a Redis timeout inside it used
to end that loop with an exception, which closed the sockets of every open page.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels_redis.core import RedisChannelLayer
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

TRANSIENT = (RedisConnectionError, RedisTimeoutError, ConnectionError, TimeoutError, OSError)
RETRY_FIRST_SECONDS = 0.1
RETRY_MAX_SECONDS = 5.0


class ResilientRedisChannelLayer(RedisChannelLayer):
    async def receive_single(self, channel: str) -> Any:
        delay = RETRY_FIRST_SECONDS
        while True:
            try:
                return await super().receive_single(channel)
            except TRANSIENT as error:
                # Messages wait in Redis's backup queue meanwhile; none is lost.
                logger.warning("Live updates: Redis error (%s); retrying in %.1f s", error, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
