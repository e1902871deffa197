"""The ASGI handler: clients that hang up mid-request cost the worker nothing."""

from __future__ import annotations

import http.client
import threading
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client

from accounts.services import api_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = 50
REQUESTS_EACH = 20
# Shorter than a request takes under this load: most clients give up mid-request.
CLIENT_PATIENCE_SECONDS = 0.05
BACKLOG_DEADLINE_SECONDS = 240


def _api_request(user) -> tuple[str, str, str | None, dict[str, str]]:
    _, token = api_token_create(user=user, name="hangs up")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return "POST", "/api/memory/turn-context", "{}", headers


def _page_request(user) -> tuple[str, str, str | None, dict[str, str]]:
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    return "GET", "/memory/", None, {"Cookie": f"{settings.SESSION_COOKIE_NAME}={session}"}


def _impatient_client(address: tuple[str, int], request: tuple) -> None:
    method, path, body, headers = request
    for _ in range(REQUESTS_EACH):
        client = http.client.HTTPConnection(*address, timeout=CLIENT_PATIENCE_SECONDS)
        try:
            client.request(method, path, body=body, headers=headers)
            client.getresponse().read()
        except OSError:  # gave up waiting: the client hangs up
            pass
        finally:
            client.close()


@pytest.mark.parametrize("make_request", [_api_request, _page_request], ids=["api", "page"])
def test_clients_hanging_up_mid_request_give_every_connection_back(live_asgi_server, make_request):
    request = make_request(UserFactory())
    url = urlsplit(live_asgi_server.url)
    address = (url.hostname or "", url.port or 80)
    clients = [
        threading.Thread(target=_impatient_client, args=(address, request)) for _ in range(CLIENTS)
    ]
    for client in clients:
        client.start()
    for client in clients:
        client.join()

    # The live server shares this process's pool: every connection can be taken again
    # (requests still running give theirs back first), so none was lost to a hang-up.
    # Each request runs in a thread of its own from its start, so a hang-up cannot stop
    # it: the burst's requests all run to their end, about 30 s of work for the page on
    # a quiet machine, more under load. The deadlines wait for that, not a fixed time.
    pool = connection.pool
    connection.close()
    taken = [pool.getconn(timeout=BACKLOG_DEADLINE_SECONDS) for _ in range(pool.max_size)]
    for conn in taken:
        pool.putconn(conn)

    headers = request[3]
    for method, path, body, _ in (("GET", "/healthz", None, None), request):
        answer = http.client.HTTPConnection(*address, timeout=BACKLOG_DEADLINE_SECONDS)
        answer.request(method, path, body=body, headers=headers)
        assert answer.getresponse().status == 200, path
        answer.close()
