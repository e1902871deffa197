"""A web worker whose database pool hands out no connection stops, to be started again.

A pool can be lost to the worker while PostgreSQL is fine: connections that are
checked out and never given back (a bug like clients hanging up mid-request, issue
22). Nothing crashes, yet every request of that worker waits the pool timeout and
fails. Each worker checks its pool from a thread, and when the pool has handed out
nothing for several checks in a row while PostgreSQL takes a new connection, the
worker shuts down: uvicorn starts a new worker in its place (with one worker,
`manage.py serve` or the container restarts the server). When PostgreSQL itself is
down, a new worker would do no better: the worker waits.

Started and stopped by the ASGI lifespan, so only a serving worker watches, never a
test process or a management command.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from django.db import OperationalError, connection

from host.core.supervise import ReadinessStreak

logger = logging.getLogger(__name__)

CHECK_EVERY_SECONDS = 15.0
FAILED_CHECKS_ALLOWED = 3
DIRECT_CONNECT_TIMEOUT_SECONDS = 5


class PoolWatch:
    def __init__(
        self,
        *,
        pool_hands_out: Callable[[], bool],
        database_answers: Callable[[], bool],
        failures_allowed: int = FAILED_CHECKS_ALLOWED,
    ) -> None:
        self.pool_hands_out = pool_hands_out
        self.database_answers = database_answers
        self.streak = ReadinessStreak(failures_allowed=failures_allowed)

    def check(self) -> bool:
        """One check; True when the worker should make way for a new one."""
        stuck = not self.pool_hands_out() and self.database_answers()
        return self.streak.checked(ready=not stuck)


def django_pool_hands_out() -> bool:
    """This thread takes a connection from the worker's pool, the way a request does."""
    try:
        connection.ensure_connection()
    except OperationalError:
        return False
    finally:
        connection.close()
    return True


def postgres_answers(**overrides: Any) -> bool:
    """A new connection past the pool: does PostgreSQL itself take one?"""
    params = connection.get_connection_params() | overrides
    params.setdefault("connect_timeout", DIRECT_CONNECT_TIMEOUT_SECONDS)
    try:
        with psycopg.connect(**params):
            return True
    except psycopg.Error:
        return False


def _watch(watch: PoolWatch, stop: threading.Event, every: float) -> None:
    while not stop.wait(every):
        if watch.check():
            logger.error(
                "Web worker %s: its database pool handed out no connection in %s checks in "
                "a row while PostgreSQL answers; stopping it so that a new one takes over.",
                os.getpid(),
                watch.streak.failures,
            )
            os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's own graceful shutdown
            return


def start(every: float = CHECK_EVERY_SECONDS) -> threading.Event:
    """Watch this worker's pool from a thread; set the event to stop watching."""
    stop = threading.Event()
    watch = PoolWatch(pool_hands_out=django_pool_hands_out, database_answers=postgres_answers)
    threading.Thread(
        target=_watch, args=(watch, stop, every), name="pool watch", daemon=True
    ).start()
    return stop


async def lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The ASGI lifespan of a web worker: the pool watch runs while it serves."""
    stop: threading.Event | None = None
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            stop = start()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if stop is not None:
                stop.set()
            await send({"type": "lifespan.shutdown.complete"})
            return
