"""A pushed fragment reaches each open page in that page's language: the push renders it
(only when a page of the person is open) once per site language and each socket picks
by its handshake (language cookie, else the browser's Accept-Language), as a page
request does."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.utils.translation import gettext

from config.asgi import application
from host import push
from host.consumers import page_language
from host.push import push_fragment

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def _session_cookie(client, user) -> str:
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def notice() -> str:
    return f'<p id="live-notice" hx-swap-oob="true">{gettext("Saved to memory")}</p>'


def test_each_socket_gets_the_fragment_in_its_pages_language(client, user):
    session = _session_cookie(client, user)
    handshakes = {
        "cookie-de": [(b"cookie", f"{session}; {settings.LANGUAGE_COOKIE_NAME}=de".encode())],
        "browser-de": [(b"cookie", session.encode()), (b"accept-language", b"de-DE,de;q=0.9")],
        "browser-en": [(b"cookie", session.encode()), (b"accept-language", b"en-GB,en;q=0.8")],
        "cookie-en-over-browser-de": [
            (b"cookie", f"{session}; {settings.LANGUAGE_COOKIE_NAME}=en".encode()),
            (b"accept-language", b"de"),
        ],
    }

    async def scenario() -> dict[str, str]:
        sockets = {
            name: WebsocketCommunicator(application, "/ws/events/", headers=[*HEADERS, *extra])
            for name, extra in handshakes.items()
        }
        for socket in sockets.values():
            connected, _ = await socket.connect()
            assert connected
        try:
            await asyncio.to_thread(push_fragment, user.pk, notice)
            return {name: await s.receive_from(timeout=5) for name, s in sockets.items()}
        finally:
            for socket in sockets.values():
                await socket.disconnect()

    received = async_to_sync(scenario)()
    assert "Im Gedächtnis gespeichert" in received["cookie-de"]
    assert "Im Gedächtnis gespeichert" in received["browser-de"]
    assert "Saved to memory" in received["browser-en"]
    assert "Saved to memory" in received["cookie-en-over-browser-de"]


def test_plain_markup_is_sent_as_it_is(client, user):
    session = _session_cookie(client, user)
    fragment = '<span id="inbox-count" hx-swap-oob="true">3</span>'

    async def scenario() -> str:
        socket = WebsocketCommunicator(
            application,
            "/ws/events/",
            headers=[
                *HEADERS,
                (b"cookie", f"{session}; {settings.LANGUAGE_COOKIE_NAME}=de".encode()),
            ],
        )
        assert (await socket.connect())[0]
        try:
            await asyncio.to_thread(push_fragment, user.pk, fragment)
            return await socket.receive_from(timeout=5)
        finally:
            await socket.disconnect()

    assert async_to_sync(scenario)() == fragment


def test_a_fragment_for_a_person_with_no_open_page_is_never_rendered(client, user, monkeypatch):
    # Not the moment a "yes" is remembered for a streamed answer's next chunks.
    monkeypatch.setattr(push, "LISTENERS_REMEMBERED_SECONDS", 0.0)
    renders: list[str] = []

    def counted_notice() -> str:
        renders.append("rendered")
        return notice()

    push_fragment(user.pk, counted_notice)
    assert renders == []  # nobody listens: no render in either language, nothing sent

    session = _session_cookie(client, user)

    async def scenario() -> str:
        socket = WebsocketCommunicator(
            application, "/ws/events/", headers=[*HEADERS, (b"cookie", session.encode())]
        )
        assert (await socket.connect())[0]
        try:
            await asyncio.to_thread(push_fragment, user.pk, counted_notice)
            return await socket.receive_from(timeout=5)
        finally:
            await socket.disconnect()

    assert "Saved to memory" in async_to_sync(scenario)()
    assert len(renders) == len(settings.LANGUAGES)  # once per site language
    renders.clear()
    push_fragment(user.pk, counted_notice)  # the page closed again
    assert renders == []


@pytest.mark.parametrize(
    ("cookie", "accept", "language"),
    [("de", "", "de"), ("", "de-AT", "de"), ("xx", "fr", "en"), ("", "", "en")],
)
def test_a_handshake_names_the_language_a_page_would_use(cookie, accept, language):
    headers = [(b"accept-language", accept.encode())] if accept else []
    scope = {
        "cookies": {settings.LANGUAGE_COOKIE_NAME: cookie} if cookie else {},
        "headers": headers,
    }
    assert page_language(scope) == language
