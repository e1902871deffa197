"""A failed connection is described in words, never by an exception's class name."""

from __future__ import annotations

import socket

import httpx
import openai
import pytest
from django.utils import translation

from accounts.probe import ConnectionProblem, server_models
from host.core.connection_words import connection_failure_words
from host.model_client import Endpoint, classify


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _real_failure(url: str) -> httpx.HTTPError:
    try:
        httpx.get(url, timeout=5)
    except httpx.HTTPError as error:
        return error
    raise AssertionError(f"{url} answered")


def test_a_refused_and_an_unknown_address_get_plain_words():
    refused = _real_failure(f"http://127.0.0.1:{_closed_port()}/v1/models")
    assert connection_failure_words(refused) == "it refused the connection"
    unknown = _real_failure("http://no-such-host.invalid/v1/models")
    assert connection_failure_words(unknown) == "its address could not be found"
    assert connection_failure_words(None) == "no connection"


def test_the_chats_error_for_an_unreachable_server_names_no_exception_class():
    cause = _real_failure(f"http://127.0.0.1:{_closed_port()}/v1")
    error = openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1/v1"))
    error.__cause__ = cause
    endpoint = Endpoint(base_url="http://127.0.0.1/v1", api_key="", model="m")
    model_error, _ = classify(error, endpoint)
    assert str(model_error).endswith("is unreachable (it refused the connection).")
    assert "ConnectError" not in str(model_error)


@pytest.mark.django_db
def test_the_profile_check_says_it_in_the_pages_language(settings):
    settings.OUTBOUND_ALLOW_PRIVATE = True
    with translation.override("de"), pytest.raises(ConnectionProblem) as problem:
        server_models(base_url=f"http://127.0.0.1:{_closed_port()}/v1")
    assert "er hat die Verbindung abgelehnt" in str(problem.value)
    assert "ConnectError" not in str(problem.value)
