"""Django's cache shares one Redis connection pool per process (host/redis_pool.py)."""

from __future__ import annotations

import httpx
import pytest
import redis
from django.core.cache import caches

from accounts.services import api_token_create
from host.redis_pool import SharedConnectionPool
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_connects(monkeypatch) -> list[object]:
    made: list[object] = []
    connect = redis.connection.AbstractConnection.connect

    def counted(self, *args, **kwargs):
        if self._sock is None:  # connect() returns at once on a live socket
            made.append(self)
        return connect(self, *args, **kwargs)

    monkeypatch.setattr(redis.connection.AbstractConnection, "connect", counted)
    return made


def test_requests_under_asgi_reuse_the_cache_connection_instead_of_opening_one_each(
    live_asgi_server, redis_connects
):
    """Each ASGI request has a cache backend of its own; before the shared pool each
    turn-context request (its known-block lookup) opened a Redis connection."""
    _, token = api_token_create(user=UserFactory(), name="redis pool")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=live_asgi_server.url, headers=headers, timeout=30) as client:
        for _ in range(8):
            assert client.post("/api/memory/turn-context", json={}).status_code == 200
    # Sequential requests: one connection serves them all (a first one may be opened here).
    assert len(redis_connects) <= 1


def test_backends_with_the_same_location_and_options_get_the_same_pool():
    one = caches.create_connection("default")._cache._get_connection_pool(write=True)
    two = caches.create_connection("default")._cache._get_connection_pool(write=True)
    assert one is two
    other = SharedConnectionPool.from_url("redis://127.0.0.1:1/15", socket_timeout=1)
    assert other is not one
