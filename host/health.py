"""Checks behind /healthz (liveness: database with pgvector, Redis) and /readyz (also a
live Celery worker). /healthz is cheap: it is polled often, so it reuses one Redis
connection pool and never waits on a worker."""

from __future__ import annotations

from typing import NotRequired, TypedDict

import redis
from celery import current_app
from django.conf import settings
from django.db import connection

WORKER_TIMEOUT_SECONDS = 5.0


class Check(TypedDict):
    ok: bool
    error: NotRequired[str]  # why it is down
    pgvector: NotRequired[str]  # the extension's version


def check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as error:  # any failure means "down"; the reason is reported
        return {"ok": False, "error": type(error).__name__}
    if row is None:
        return {"ok": False, "error": "pgvector extension is not installed"}
    # The check needs pgvector; the answer names no version (anyone may ask).
    return {"ok": True}


_redis_clients: dict[str, redis.Redis] = {}


def redis_client(url: str) -> redis.Redis:
    client = _redis_clients.get(url)
    if client is None:
        client = _redis_clients[url] = redis.Redis.from_url(
            url, socket_timeout=2, socket_connect_timeout=2
        )
    return client


def check_redis() -> Check:
    try:
        redis_client(settings.REDIS_URL).ping()
    except redis.RedisError as error:
        return {"ok": False, "error": type(error).__name__}
    return {"ok": True}


def check_worker() -> Check:
    """A worker's own process answers, not a job: a queue busy with indexing or notes'
    embeddings must not make the site look down."""
    try:
        replies = current_app.control.ping(timeout=WORKER_TIMEOUT_SECONDS, limit=1)
    except Exception as error:  # broker down …
        return {"ok": False, "error": type(error).__name__}
    if not replies:
        return {"ok": False, "error": "no worker answered"}
    return {"ok": True}


def report(*, ready: bool = False) -> tuple[bool, dict[str, str | Check]]:
    checks: dict[str, Check] = {"database": check_database(), "redis": check_redis()}
    if ready:
        # Without Redis the ping cannot travel; report the worker down without waiting.
        checks["worker"] = (
            check_worker() if checks["redis"]["ok"] else {"ok": False, "error": "redis is down"}
        )
    healthy = all(check["ok"] for check in checks.values())
    return healthy, {"status": "ok" if healthy else "degraded", **checks}
