"""The per-token switch "this client reads its own rule files": page, tokens API, schema."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.models import ApiToken
from accounts.services import api_token_create
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PAGE = "/accounts/settings/api-tokens/"


def test_the_switch_is_set_when_a_token_is_created_on_the_page_and_shown_in_the_list(client, user):
    client.force_login(user)
    client.post(
        PAGE, {"name": "cursor", "scope": "read_write", "reads_own_rule_files": "on"}, follow=True
    )
    client.post(PAGE, {"name": "script", "scope": "read_write"}, follow=True)
    rows = {row.name: row.reads_own_rule_files for row in ApiToken.objects.filter(user=user)}
    assert rows == {"cursor": True, "script": False}
    page = client.get(PAGE).text
    assert 'name="reads_own_rule_files"' in page and "This client reads its own rule files" in page
    assert page.count("reads its own rule files</span>") == 1


def test_the_switch_is_changed_on_the_tokens_page_with_csrf_and_only_for_ones_own_token(user):
    row, _ = api_token_create(user=user, name="agent")
    theirs, _ = api_token_create(user=UserFactory(), name="theirs")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    url = f"{PAGE}{row.pk}/rule-files/"
    assert browser.post(url, {"reads_own_rule_files": "on"}).status_code == 403
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get(PAGE).text)[1]
    response = browser.post(url, {"reads_own_rule_files": "on", "csrfmiddlewaretoken": csrf})
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.reads_own_rule_files is True
    browser.post(url, {"csrfmiddlewaretoken": csrf})
    row.refresh_from_db()
    assert row.reads_own_rule_files is False
    foreign = f"{PAGE}{theirs.pk}/rule-files/"
    assert browser.post(foreign, {"csrfmiddlewaretoken": csrf}).status_code == 404


def test_the_tokens_api_creates_lists_and_changes_the_switch(api, user):
    created = api.post("/api/tokens", {"name": "claude", "reads_own_rule_files": True})
    assert created.status_code == 201 and created.json()["reads_own_rule_files"] is True
    token_id = created.json()["id"]
    assert [t["reads_own_rule_files"] for t in api.get("/api/tokens").json()] == [True]
    changed = api.client.patch(
        f"/api/tokens/{token_id}",
        data='{"reads_own_rule_files": false}',
        content_type="application/json",
    )
    assert changed.status_code == 200 and changed.json()["reads_own_rule_files"] is False
    assert ApiToken.objects.get(pk=token_id).reads_own_rule_files is False


def test_a_bad_switch_value_is_a_422_naming_the_field_and_a_foreign_token_a_404(api, user):
    row, _ = api_token_create(user=user, name="agent")
    bad = api.client.patch(
        f"/api/tokens/{row.pk}",
        data='{"reads_own_rule_files": "sometimes"}',
        content_type="application/json",
    )
    assert bad.status_code == 422 and "reads_own_rule_files" in bad.text
    theirs, _ = api_token_create(user=UserFactory(), name="theirs")
    foreign = api.client.patch(
        f"/api/tokens/{theirs.pk}",
        data='{"reads_own_rule_files": true}',
        content_type="application/json",
    )
    assert foreign.status_code == 404


def test_a_token_cannot_change_its_own_switch(client, user):
    row, token = api_token_create(user=user, name="agent")
    response = client.patch(
        f"/api/tokens/{row.pk}",
        data='{"reads_own_rule_files": true}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 403
    row.refresh_from_db()
    assert row.reads_own_rule_files is False


def test_the_openapi_schema_describes_the_switch(client):
    schemas = client.get("/api/openapi.json").json()["components"]["schemas"]
    for name in ("ApiTokenIn", "ApiTokenOut", "ApiTokenPatch"):
        assert "reads_own_rule_files" in schemas[name]["properties"]
    assert "reference_files" in schemas["TurnContextOut"]["properties"]


def test_the_switch_speaks_german_on_the_tokens_page(client, user):
    api_token_create(user=user, name="cursor", reads_own_rule_files=True)
    client.force_login(user)
    page = client.get(PAGE, headers={"Accept-Language": "de"}).text
    assert "Dieser Client liest seine Regeldateien selbst" in page
    assert "liest seine Regeldateien selbst</span>" in page
    assert "Referenzdateien senden" in page
