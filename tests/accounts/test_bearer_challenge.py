"""A client with no, a bad or a revoked token is asked for a token: 401 with a Bearer
challenge naming the protected-resource metadata (RFC 9728), never a CSRF 403."""

from __future__ import annotations

import re

import httpx
import pytest

from accounts.services import api_token_create, api_token_revoke
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db


def _metadata_url(challenge: str) -> str:
    found = re.search(r'resource_metadata="([^"]+)"', challenge)
    assert found, challenge
    return found.group(1)


@pytest.mark.parametrize("method", ["get", "post", "put", "delete"])
@pytest.mark.parametrize("token", [None, "mh_not-a-real-token", "revoked"])
def test_every_api_call_without_a_usable_token_is_a_401_with_a_bearer_challenge(
    client, user, method, token
):
    scope = ensure_user_scope(user)
    headers = {}
    if token == "revoked":
        row, token = api_token_create(user=user, name="old")
        api_token_revoke(token=row)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    url = f"/api/memory/scopes/{scope.pk}/notes"
    if method in ("put", "delete"):
        url += "/home"
    if method == "get":
        answer = client.get(url, headers=headers)
    else:
        answer = getattr(client, method)(
            url, data="{}", content_type="application/json", headers=headers
        )
    assert answer.status_code == 401, answer.content
    assert "CSRF" not in answer.content.decode()
    assert "API tokens" in answer.json()["detail"]
    challenge = answer["WWW-Authenticate"]
    assert challenge.startswith('Bearer realm="memory-host"')
    assert ('error="invalid_token"' in challenge) == bool(token)
    assert _metadata_url(challenge) == (
        "http://testserver/.well-known/oauth-protected-resource/api"
    )


def test_a_signed_in_browser_still_needs_the_csrf_token_for_writes(user):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    scope = ensure_user_scope(user)
    answer = browser.post(
        f"/api/memory/scopes/{scope.pk}/notes", {"text": "x"}, content_type="application/json"
    )
    assert answer.status_code == 403
    assert browser.get("/api/me").status_code == 200


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/.well-known/oauth-protected-resource", "http://testserver/api/"),
        ("/.well-known/oauth-protected-resource/api", "http://testserver/api/"),
        ("/.well-known/oauth-protected-resource/mcp", "http://testserver/mcp/"),
    ],
)
def test_the_protected_resource_metadata_names_the_resource_and_the_token_page(
    client, path, resource
):
    answer = client.get(path)
    assert answer.status_code == 200
    body = answer.json()
    assert body["resource"] == resource
    assert body["bearer_methods_supported"] == ["header"]
    assert body["resource_documentation"] == "http://testserver/accounts/settings/api-tokens/"
    assert "authorization_servers" not in body


@pytest.mark.django_db(transaction=True)
def test_the_mcp_401_points_at_the_mcp_metadata_which_answers(live_asgi_server, user):
    row, token = api_token_create(user=user, name="gone")
    api_token_revoke(token=row)
    for headers in ({}, {"Authorization": f"Bearer {token}"}):
        answer = httpx.post(
            f"{live_asgi_server.url}/mcp/",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", **headers},
        )
        assert answer.status_code == 401
        challenge = answer.headers["www-authenticate"]
        assert ('error="invalid_token"' in challenge) == bool(headers)
        metadata = httpx.get(_metadata_url(challenge))
        assert metadata.status_code == 200
        assert metadata.json()["resource"] == f"{live_asgi_server.url}/mcp/"
