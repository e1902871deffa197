"""The client address: rightmost X-Forwarded-For hop outside TRUSTED_PROXIES."""

from __future__ import annotations

import ipaddress
import logging

import pytest
from django.core.cache import cache
from django.http import HttpResponse
from django.test import RequestFactory

from host.client_address import client_address, forwarded_client
from host.request_id import request_id_middleware

PROXY = (ipaddress.ip_network("10.9.0.0/24"),)


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "expected"),
    [
        ("10.9.0.2", "198.51.100.7", "198.51.100.7"),
        # The client wrote the left hops; the proxy appended the right one.
        ("10.9.0.2", "1.2.3.4, 5.6.7.8, 198.51.100.7", "198.51.100.7"),
        # A chain of our own proxies: skip all of them.
        ("10.9.0.2", "1.2.3.4, 198.51.100.7, 10.9.0.3", "198.51.100.7"),
        # Not from a trusted proxy: the header is the client's own claim.
        ("198.51.100.9", "1.2.3.4", "198.51.100.9"),
        ("10.9.0.2", "", "10.9.0.2"),
        ("10.9.0.2", "nonsense, 10.9.0.3", "10.9.0.3"),
        ("10.9.0.2", "[2001:db8::5]:4711", "2001:db8::5"),
        ("10.9.0.2", "198.51.100.7:4711", "198.51.100.7"),
        ("::ffff:198.51.100.9", "1.2.3.4", "198.51.100.9"),
    ],
)
def test_only_hops_added_by_trusted_proxies_are_believed(peer, forwarded_for, expected):
    assert forwarded_client(peer, forwarded_for, PROXY) == expected


def test_without_trusted_proxies_the_header_is_ignored(settings):
    settings.TRUSTED_PROXIES = []
    request = RequestFactory().get("/", REMOTE_ADDR="10.9.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4")
    assert client_address(request) == "10.9.0.2"


def test_log_lines_carry_the_client_address(settings, caplog):
    settings.TRUSTED_PROXIES = ["10.9.0.0/24"]
    settings.LOG_REQUESTS = True
    request = RequestFactory().get(
        "/x", REMOTE_ADDR="10.9.0.2", HTTP_X_FORWARDED_FOR="1.2.3.4, 198.51.100.7"
    )
    with caplog.at_level(logging.INFO, logger="memory_addon.access"):
        request_id_middleware(lambda r: HttpResponse("ok"))(request)
    (line,) = [r for r in caplog.records if r.name == "memory_addon.access"]
    assert line.getMessage() == "GET /x 200"
    assert line.client == "198.51.100.7"


def _sign_up(client, n, spoofed):
    return client.post(
        "/accounts/sign-up/",
        {
            "username": f"spoofer{n}",
            "email": f"s{n}@example.org",
            "password1": "a long pass phrase 123",
            "password2": "a long pass phrase 123",
        },
        REMOTE_ADDR="10.9.0.2",
        HTTP_X_FORWARDED_FOR=f"{spoofed}, 198.51.100.7",
    )


@pytest.mark.django_db(transaction=True)
def test_spoofed_forwarded_hops_do_not_dodge_the_sign_up_limit(client, settings):
    settings.TRUSTED_PROXIES = ["10.9.0.0/24"]
    settings.SIGNUP_RATE = "5/h"
    cache.clear()
    statuses = []
    for n in range(6):
        statuses.append(_sign_up(client, n, spoofed=f"203.0.113.{n}").status_code)
        client.logout()
    assert statuses == [302] * 5 + [429]
