"""NUL bytes and lone surrogates get a clear 400 everywhere, never a 500 (red-team finding)."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db

NUL_JSON = '{"name": "a\\u0000b", "provider": "none"}'
SURROGATE_JSON = '{"name": "a\\ud800b", "provider": "none"}'


@pytest.mark.parametrize("body", [NUL_JSON, SURROGATE_JSON])
def test_json_with_unstorable_text_is_a_clear_400(client, user, body):
    client.force_login(user)
    response = client.post("/api/knowledge/stores", body, content_type="application/json")
    assert response.status_code == 400
    assert "NUL character or broken Unicode" in response.json()["detail"]


def test_a_form_post_with_a_nul_byte_is_a_clear_400(client, user):
    client.force_login(user)
    response = client.post("/memory/", {"text": "a\x00b"})
    assert response.status_code == 400 and b"NUL character" in response.content


def test_a_query_string_with_a_nul_byte_is_a_clear_400(client, user):
    client.force_login(user)
    assert client.get("/chat/?q=%00").status_code == 400


def test_an_over_long_collection_name_is_a_4xx(client, user):
    client.force_login(user)
    response = client.post(
        "/api/knowledge/stores",
        json.dumps({"name": "n" * 121, "provider": "none"}),
        content_type="application/json",
    )
    assert response.status_code in (400, 422)


def test_ordinary_unicode_still_passes(client, user):
    client.force_login(user)
    response = client.post(
        "/api/knowledge/stores",
        json.dumps({"name": "Grüße 東京 🙂", "provider": "none"}),
        content_type="application/json",
    )
    assert response.status_code == 201
