"""MCP answers carry the security headers every other answer of the site carries."""

from __future__ import annotations

import httpx
import pytest

from accounts.services import api_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _site_headers(url):
    return httpx.get(f"{url}/accounts/sign-in/").headers


@pytest.mark.parametrize("signed", [False, True], ids=["refused", "answered"])
def test_mcp_answers_carry_the_sites_security_headers(live_asgi_server, signed):
    headers = dict(ACCEPT)
    if signed:
        headers["Authorization"] = f"Bearer {api_token_create(user=UserFactory(), name='m')[1]}"
    answer = httpx.post(f"{live_asgi_server.url}/mcp/", json=LIST_TOOLS, headers=headers)
    assert answer.status_code == (200 if signed else 401)
    site = _site_headers(live_asgi_server.url)
    for name in ("x-content-type-options", "x-frame-options", "referrer-policy"):
        assert answer.headers[name] == site[name], name
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in site["content-security-policy"]
    assert "no-store" in answer.headers["cache-control"]
