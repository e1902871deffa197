"""A request that cannot get a database connection is a 503 with Retry-After (not a 500),
and its Idempotency-Key is not spent: the retry stores the write once."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest
from django.db import connection

from accounts.services import api_token_create
from memory_addon.models import MemoryFile
from memory_addon.services.scopes import ensure_user_scope
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _call(server_url: str, method: str, path: str, body: str | None, headers: dict[str, str]):
    url = urlsplit(server_url)
    client = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)
    client.request(method, path, body=body, headers=headers)
    response = client.getresponse()
    answer = (response.status, response.headers, response.read())
    client.close()
    return answer


def test_a_note_sent_while_the_database_is_out_of_reach_is_503_and_its_retry_stores_it_once(
    live_asgi_server, monkeypatch
):
    user = UserFactory()
    scope = ensure_user_scope(user)
    _, token = api_token_create(user=user, name="outage")
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Idempotency-Key": "outage-1",
    }
    path = f"/api/memory/scopes/{scope.pk}/notes"
    body = json.dumps({"text": "likes green tea"})
    pool = connection.pool
    connection.close()
    # Every pooled connection taken: the request waits the pool's timeout, then fails.
    monkeypatch.setattr(pool, "timeout", 0.5)
    taken = [pool.getconn() for _ in range(pool.max_size)]
    try:
        status, answer_headers, content = _call(live_asgi_server.url, "POST", path, body, headers)
        assert status == 503
        assert answer_headers["Retry-After"] == "5"
        assert "database is not reachable" in json.loads(content)["detail"]
        status, _, _ = _call(live_asgi_server.url, "GET", "/api/memory/scopes", None, headers)
        assert status == 503
    finally:
        for conn in taken:
            pool.putconn(conn)
    status, answer_headers, content = _call(live_asgi_server.url, "POST", path, body, headers)
    assert status == 201 and "Idempotent-Replayed" not in answer_headers
    again = _call(live_asgi_server.url, "POST", path, body, headers)
    assert again[0] == 201 and again[1]["Idempotent-Replayed"] == "true"
    index = MemoryFile.objects.get(scope=scope, path="index.md").content
    assert index.count("likes green tea") == 1
