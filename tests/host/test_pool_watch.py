"""A web worker whose database pool hands out nothing, while PostgreSQL answers, makes way."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading

import pytest
from django.db import connection

from host import pool_watch
from host.pool_watch import PoolWatch, django_pool_hands_out, postgres_answers
from tests.conftest import ROOT

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


def test_a_stuck_pool_ends_its_worker_process_with_sigterm():
    # The watch's own thread, in a process of its own, signals that process: uvicorn's
    # graceful shutdown of a worker (its supervisor then starts a new one).
    script = (
        "import logging, threading, time\n"
        "from host.pool_watch import PoolWatch, _watch\n"
        "logging.basicConfig()\n"
        "watch = PoolWatch(pool_hands_out=lambda: False, database_answers=lambda: True,"
        " failures_allowed=2)\n"
        "threading.Thread(target=_watch, args=(watch, threading.Event(), 0.01)).start()\n"
        "time.sleep(120)\n"  # the process waits to be signalled; the test never sleeps
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == -signal.SIGTERM
    assert "handed out no connection in 2 checks in a row" in child.stderr
