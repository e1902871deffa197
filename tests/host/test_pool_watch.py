"""A web worker whose database pool hands out nothing, while PostgreSQL answers, makes way."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.db import connection

from host import pool_watch
from host.pool_watch import PoolWatch, django_pool_hands_out, postgres_answers

pytestmark = pytest.mark.django_db(transaction=True)


def _in_a_thread(check):  # a request's thread has a connection of its own
    answer = []
    thread = threading.Thread(target=lambda: answer.append(check()))
    thread.start()
    thread.join()
    return answer[0]


def test_a_pool_that_lost_every_connection_makes_the_worker_give_way():
    watch = PoolWatch(
        pool_hands_out=lambda: _in_a_thread(django_pool_hands_out),
        database_answers=postgres_answers,
        failures_allowed=2,
    )
    assert watch.check() is False  # the pool hands out a connection
    pool = connection.pool
    connection.close()
    lost = [pool.getconn() for _ in range(pool.max_size)]  # checked out, never returned
    try:
        assert watch.check() is False  # one failed check is not yet a broken worker
        assert watch.check() is True
    finally:
        for conn in lost:
            pool.putconn(conn)
    assert watch.check() is False


def test_a_worker_waits_while_postgresql_itself_is_down(tmp_path):
    def down() -> bool:
        return postgres_answers(host=str(tmp_path))  # no server listens there

    assert postgres_answers() is True and down() is False
    watch = PoolWatch(pool_hands_out=lambda: False, database_answers=down, failures_allowed=1)
    assert [watch.check() for _ in range(3)] == [False, False, False]


def test_the_watch_runs_while_the_worker_serves():
    async def serve_and_stop() -> list[str]:
        inbox: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        sent: list[str] = []

        async def send(message: dict[str, str]) -> None:
            sent.append(message["type"])
            if message["type"] == "lifespan.startup.complete":
                assert any(t.name == "pool watch" for t in threading.enumerate())
                await inbox.put({"type": "lifespan.shutdown"})

        await inbox.put({"type": "lifespan.startup"})
        await pool_watch.lifespan({"type": "lifespan"}, inbox.get, send)
        return sent

    assert asyncio.run(serve_and_stop()) == [
        "lifespan.startup.complete",
        "lifespan.shutdown.complete",
    ]
    watchers = [t for t in threading.enumerate() if t.name == "pool watch"]
    for watcher in watchers:
        watcher.join(timeout=30)
    assert not any(watcher.is_alive() for watcher in watchers)
