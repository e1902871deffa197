"""Headers, websocket origins and abuse limits (H1, H2)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.core.cache import cache

from config.asgi import application
from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def test_pages_send_a_content_security_policy_without_inline_script(client, user):
    client.force_login(user)
    response = client.get("/memory/")
    policy = response["Content-Security-Policy"]
    assert (
        "script-src 'self'" in policy and "unsafe-inline" not in policy.split("style-src-attr")[0]
    )
    assert "frame-ancestors 'none'" in policy


def test_no_template_has_inline_script_or_event_handlers():
    offenders = []
    for template in TEMPLATES.rglob("*.html"):
        text = template.read_text()
        if re.search(r"\son[a-z]+\s*=", text) or re.search(
            r"<script(?![^>]*\bsrc=)(?![^>]*application/json)", text
        ):
            offenders.append(template.name)
    assert offenders == []


@pytest.mark.parametrize("url", ["/memory/", "/inbox/", "/api/memory/scopes"])
def test_pages_and_answers_that_show_memory_are_never_cached(client, user, url):
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]


def _ws_connects(client, user, origin: bytes, host: bytes = b"127.0.0.1:8000") -> bool:
    client.force_login(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"

    async def scenario():
        communicator = WebsocketCommunicator(
            application,
            "/ws/events/",
            headers=[(b"origin", origin), (b"host", host), (b"cookie", cookie.encode())],
        )
        connected, _ = await communicator.connect()
        await communicator.disconnect()
        return connected

    return async_to_sync(scenario)()


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        (b"http://127.0.0.1:8000", True),
        (b"http://127.0.0.1:9999", False),  # same host, another port
        (b"https://127.0.0.1:8000", False),  # same host and port, another scheme
        (b"http://localhost:8000", False),  # another allowed host name, not this origin
        (b"null", False),
    ],
)
def test_websocket_origin_must_match_scheme_host_and_port(client, user, origin, allowed):
    assert _ws_connects(client, user, origin) is allowed


def _sign_in(client, username, password, ip="10.0.0.1"):
    return client.post(
        "/accounts/sign-in/", {"username": username, "password": password}, REMOTE_ADDR=ip
    )


def test_sign_in_is_paused_for_the_account_at_that_address_only(client):
    person = UserFactory()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _sign_in(client, person.username, "wrong", ip="10.0.1.1")
    # Right password, same address: this pair is paused.
    response = _sign_in(client, person.username, PASSWORD, ip="10.0.1.1")
    assert response.status_code == 429 and b"Too many sign-in attempts" in response.content
    assert "_auth_user_id" not in client.session
    assert _sign_in(client, person.username, PASSWORD, ip="10.0.2.1").status_code == 302


def test_sign_in_attempts_are_rate_limited_per_client_address(client, settings):
    settings.SIGNIN_RATE = "3/h"
    people = [UserFactory() for _ in range(3)]
    for person in people:
        _sign_in(client, person.username, "wrong", ip="10.0.3.3")
    fresh = UserFactory()
    response = _sign_in(client, fresh.username, PASSWORD, ip="10.0.3.3")
    assert response.status_code == 429
    assert _sign_in(client, fresh.username, PASSWORD, ip="10.0.4.4").status_code == 302


def test_sign_up_is_rate_limited_per_client_address(client, settings):
    settings.SIGNUP_RATE = "2/h"
    cache.clear()
    statuses = []
    for n in range(3):
        response = client.post(
            "/accounts/sign-up/",
            {
                "username": f"newcomer{n}",
                "email": f"n{n}@example.org",
                "password1": "a long pass phrase 123",
                "password2": "a long pass phrase 123",
            },
            REMOTE_ADDR="10.0.5.5",
        )
        statuses.append(response.status_code)
        client.logout()
    assert statuses == [302, 302, 429]
    assert b"Too many accounts" in response.content
