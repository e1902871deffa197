"""A person's slow embeddings server cannot take the site down for everyone (issue: H2, K7).

Bounded and local: 20 requests wait on a gated fake server; the test ends by opening it.
"""

from __future__ import annotations

import threading

import httpx
import pytest
from django.conf import settings
from django.test import Client

from accounts.services import api_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
# More than the database pool holds (DATABASE_POOL_MAX, 10) and than the requests a web
# worker runs at once (WEB_WORKER_REQUESTS, 16): a waiting request gives back both.
WAITING = 20


def _session(user) -> dict[str, str]:
    client = Client()
    client.force_login(user)
    return {settings.SESSION_COOKIE_NAME: client.cookies[settings.SESSION_COOKIE_NAME].value}


def test_requests_waiting_on_a_slow_outside_server_hold_no_database_connection_nor_place(
    live_asgi_server, celery_worker, fake_openai, store, user, settings
):
    # Longer than the wait below: a request gives up on the embedding only once it has
    # been seen waiting with the others.
    settings.EMBEDDING_QUERY_TIMEOUT_SECONDS = 90
    assert settings.DATABASES["default"]["OPTIONS"]["pool"]["max_size"] < WAITING
    assert settings.WEB_WORKER_REQUESTS < WAITING
    _, token = api_token_create(user=user, name="slow")
    fake_openai.hold_after = len(fake_openai.embedding_inputs)  # every new call waits
    answers: list[int] = []

    def search() -> None:
        response = httpx.post(
            f"{live_asgi_server.url}/api/knowledge/retrieve",
            json={"store_ids": [store.pk], "query": "alpacas"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        answers.append(response.status_code)

    threads = [threading.Thread(target=search) for _ in range(WAITING)]
    for thread in threads:
        thread.start()
    try:
        with fake_openai.held_changed:
            assert fake_openai.held_changed.wait_for(
                lambda: fake_openai.held >= WAITING, timeout=60
            )
        assert answers == []  # all of them wait at once: none gave up on its embedding
        other = UserFactory()
        with httpx.Client(base_url=live_asgi_server.url, cookies=_session(other)) as browser:
            assert browser.get("/memory/", timeout=5).status_code == 200
            assert browser.get("/knowledge/", timeout=5).status_code == 200
        assert httpx.get(f"{live_asgi_server.url}/healthz", timeout=8).status_code == 200
    finally:
        fake_openai.release.set()
        for thread in threads:
            thread.join(timeout=60)
    assert answers == [200] * WAITING
