"""API tokens: the Settings page, scopes enforced on the API, expiry, offline API docs."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import api_token_create, api_token_find
from memory_addon.services.scopes import ensure_user_scope

pytestmark = pytest.mark.django_db


def _bearer(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_the_page_creates_a_token_shows_it_once_and_lists_it(client, user):
    client.force_login(user)
    created = client.post(
        "/accounts/settings/api-tokens/", {"name": "laptop", "scope": "read_only"}, follow=True
    )
    assert created.status_code == 200 and created.redirect_chain  # a reload cannot repeat it
    token = re.search(r'value="(mh_[^"]+)"', created.content.decode()).group(1)
    row = ApiToken.objects.get(user=user)
    assert row.scope == ApiToken.Scope.READ_ONLY and row.token_hash != token
    listed = client.get("/accounts/settings/api-tokens/").content.decode()
    assert "laptop" in listed and token not in listed and "never used" in listed
    assert client.get("/api/me", **_bearer(token)).status_code == 200


def test_an_expiry_in_the_past_is_refused_on_the_page(client, user):
    client.force_login(user)
    response = client.post(
        "/accounts/settings/api-tokens/",
        {"name": "old", "scope": "read_write", "expires_on": "2000-01-01"},
    )
    assert response.status_code == 400 and "after today" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_on_the_page_stops_the_token(client, user):
    row, token = api_token_create(user=user, name="ci")
    client.force_login(user)
    client.post(f"/accounts/settings/api-tokens/{row.pk}/revoke/")
    client.logout()
    assert client.get("/api/me", **_bearer(token)).status_code == 401


def test_another_persons_token_cannot_be_revoked(client, user):
    from tests.factories import UserFactory

    row, _ = api_token_create(user=UserFactory(), name="theirs")
    client.force_login(user)
    assert client.post(f"/accounts/settings/api-tokens/{row.pk}/revoke/").status_code == 404


def test_an_expired_token_is_a_401(client, user):
    row, token = api_token_create(
        user=user, name="short", expires_at=timezone.now() + timedelta(hours=1)
    )
    assert client.get("/api/me", **_bearer(token)).status_code == 200
    ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/me", **_bearer(token)).status_code == 401


def test_a_read_only_token_reads_but_every_write_is_a_403(client, user):
    scope = ensure_user_scope(user)
    _, token = api_token_create(user=user, name="ro", scope=ApiToken.Scope.READ_ONLY)
    assert client.get("/api/memory/scopes", **_bearer(token)).status_code == 200
    put = client.put(
        f"/api/memory/scopes/{scope.pk}/file?path=a.md",
        {"content": "x"},
        content_type="application/json",
        **_bearer(token),
    )
    assert put.status_code == 403 and "read-only" in put.json()["detail"]
    tool = client.post(
        "/api/memory/tools/call",
        {"turn": {}, "name": "propose_change", "arguments": {"action": "add", "text": "- a"}},
        content_type="application/json",
        **_bearer(token),
    )
    assert tool.status_code == 403
    read = client.post(
        "/api/memory/tools/call",
        {"turn": {}, "name": "context_read", "arguments": {"path": "index.md"}},
        content_type="application/json",
        **_bearer(token),
    )
    assert read.status_code == 200


def test_a_bank_only_token_reaches_only_bank_endpoints_and_tools(client, user):
    _, token = api_token_create(user=user, name="bank", scope=ApiToken.Scope.BANK_ONLY)
    assert client.get("/api/memory/scopes", **_bearer(token)).status_code == 403
    assert client.get("/api/knowledge/stores", **_bearer(token)).status_code == 403
    status = client.get("/api/memory/banks/status?project_key=git:x", **_bearer(token))
    assert status.status_code == 200
    chat_tool = client.post(
        "/api/memory/tools/call",
        {"turn": {}, "name": "context_read", "arguments": {}},
        content_type="application/json",
        **_bearer(token),
    )
    assert chat_tool.status_code == 403
    bank_tool = client.post(
        "/api/memory/tools/call",
        {"turn": {"project_key": "git:x"}, "name": "write_memory", "arguments": {"content": "a"}},
        content_type="application/json",
        **_bearer(token),
    )
    assert bank_tool.status_code == 200 and bank_tool.json()["ok"]


def test_a_token_cannot_manage_tokens(client, user):
    _, token = api_token_create(user=user, name="rw")
    assert client.get("/api/tokens", **_bearer(token)).status_code == 403
    made = client.post(
        "/api/tokens", {"name": "more"}, content_type="application/json", **_bearer(token)
    )
    assert made.status_code == 403


def test_the_api_creates_scoped_tokens_with_an_expiry(client, user):
    client.force_login(user)
    expires = (timezone.now() + timedelta(days=3)).isoformat()
    body = client.post(
        "/api/tokens",
        {"name": "agent", "scope": "bank_only", "expires_at": expires},
        content_type="application/json",
    ).json()
    assert body["scope"] == "bank_only" and body["token"].startswith("mh_")
    assert body["expires_at"] is not None


def test_the_api_docs_load_nothing_from_a_cdn(client, user):
    client.force_login(user)
    html = client.get("/api/docs").content.decode()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(s.startswith("/static/") for s in sources), sources
    assert "cdn" not in html.lower()
    for source in sources:
        assert client.get(source).status_code == 200, source


@pytest.mark.django_db(transaction=True)
def test_a_token_is_marked_used_without_holding_its_row_for_the_request(user):
    """A keyed write runs in one transaction: the token's row is not locked through it,
    so the token's other requests do not queue behind it."""
    row, token = api_token_create(user=user, name="busy")
    locked_elsewhere: list[bool] = []

    def lock_from_another_connection() -> None:
        try:
            with transaction.atomic():
                ApiToken.objects.select_for_update(nowait=True).get(pk=row.pk)
            locked_elsewhere.append(True)
        finally:
            connection.close()

    with transaction.atomic():
        assert api_token_find(token) is not None
        other = threading.Thread(target=lock_from_another_connection)
        other.start()
        other.join(timeout=60)
        assert locked_elsewhere == [True]
    first = ApiToken.objects.get(pk=row.pk).last_used_at
    assert first is not None
    api_token_find(token)  # within the minute: no second write
    assert ApiToken.objects.get(pk=row.pk).last_used_at == first


def test_the_compiled_token_lookup_gives_the_row_and_user_the_orm_gives(user):
    row, token = api_token_create(user=user, name="compiled", expires_at=None)
    found = api_token_find(token)
    expected = ApiToken.objects.select_related("user").get(pk=row.pk)
    for field in ApiToken._meta.concrete_fields:
        if field.name != "last_used_at":  # the lookup marks the token used
            assert getattr(found, field.attname) == getattr(expected, field.attname), field.name
    for field in type(user)._meta.concrete_fields:
        assert getattr(found.user, field.attname) == getattr(expected.user, field.attname)
    assert not found._state.adding and found._state.db == "default"


@pytest.mark.parametrize("gone", ["revoked", "expired", "inactive user", "other text"])
def test_the_token_lookup_finds_no_revoked_expired_or_inactive_token(user, gone):
    row, token = api_token_create(user=user, name="gone")
    if gone == "revoked":
        ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    elif gone == "expired":
        ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    elif gone == "inactive user":
        type(user).objects.filter(pk=user.pk).update(is_active=False)
    else:
        token = token + "x"
    assert api_token_find(token) is None
