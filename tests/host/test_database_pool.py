"""The database pool: dead connections are replaced before a request gets one."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import psycopg
import pytest
from django.db import connection

from accounts.services import api_token_create
from memory_addon.services.scopes import ensure_user_scope
from tests.conftest import suite_database_url
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _fill_the_pool() -> list[int]:
    """Every connection of the pool opened and idle, as after a busy minute; their
    server processes."""
    pool = connection.pool
    connection.close()
    taken = [pool.getconn() for _ in range(pool.max_size)]
    for conn in taken:
        pool.putconn(conn)
    return [conn.info.backend_pid for conn in taken]


def _terminate(backends: list[int]) -> list[bool]:
    """What a PostgreSQL restart does to the pool's connections."""
    with psycopg.connect(suite_database_url(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [backends]
        ).fetchall()
    return [terminated for (terminated,) in rows]


def test_requests_after_the_database_dropped_every_connection_succeed(live_asgi_server):
    user = UserFactory()
    scope = ensure_user_scope(user)
    _, token = api_token_create(user=user, name="restart")
    url = urlsplit(live_asgi_server.url)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    assert all(_terminate(_fill_the_pool()))

    statuses = []
    for number in range(connection.pool.max_size + 2):
        client = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
        body = json.dumps({"text": f"note {number}"})
        client.request("POST", f"/api/memory/scopes/{scope.pk}/notes", body=body, headers=headers)
        statuses.append(client.getresponse().status)
        client.close()
    assert statuses == [201] * len(statuses)
    client = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    client.request("GET", "/healthz")
    assert client.getresponse().status == 200
