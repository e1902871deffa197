"""The ASGI handler: clients that hang up mid-request cost the worker nothing."""

from __future__ import annotations

import http.client
import threading
from urllib.parse import urlsplit

import pytest
from django.db import connection

from accounts.services import api_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = 50
REQUESTS_EACH = 20
# Shorter than the request takes under this load: most clients give up mid-request.
CLIENT_PATIENCE_SECONDS = 0.05


def _impatient_client(address: tuple[str, int], headers: dict[str, str]) -> None:
    for _ in range(REQUESTS_EACH):
        client = http.client.HTTPConnection(*address, timeout=CLIENT_PATIENCE_SECONDS)
        try:
            client.request("POST", "/api/memory/turn-context", body="{}", headers=headers)
            client.getresponse().read()
        except OSError:  # gave up waiting: the client hangs up
            pass
        finally:
            client.close()


def test_clients_hanging_up_mid_request_give_every_connection_back(live_asgi_server):
    _, token = api_token_create(user=UserFactory(), name="hangs up")
    url = urlsplit(live_asgi_server.url)
    address = (url.hostname or "", url.port or 80)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    clients = [
        threading.Thread(target=_impatient_client, args=(address, headers)) for _ in range(CLIENTS)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()

    # The live server shares this process's pool: every connection can be taken again
    # (requests still running give theirs back first), so none was lost to a hang-up.
    pool = connection.pool
    connection.close()
    taken = [pool.getconn() for _ in range(pool.max_size)]
    for conn in taken:
        pool.putconn(conn)

    for path, body in (("/healthz", None), ("/api/memory/turn-context", "{}")):
        answer = http.client.HTTPConnection(*address, timeout=30)
        answer.request("GET" if body is None else "POST", path, body=body, headers=headers)
        assert answer.getresponse().status == 200, path
        answer.close()
