"""Moments given by a client: what PostgreSQL cannot store is a 422 naming the field."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

UNSTORABLE = [
    "2024-01-01T00:00:00+16:00",  # PostgreSQL stops at 15:59
    "2024-01-01T00:00:00-23:30",
    "0001-01-01T00:00:00+05:00",  # before the year 1 in UTC
    "9999-12-31T23:59:59-05:00",  # after the year 9999 in UTC
]


@pytest.mark.parametrize("value", UNSTORABLE)
@pytest.mark.parametrize("field", ["since", "until"])
def test_an_unstorable_audit_bound_is_a_422_naming_it(client, user, field, value):
    client.force_login(user)
    response = client.get("/api/chats/changes/audit", {field: value})
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"][-1] == field


@pytest.mark.parametrize("value", UNSTORABLE)
def test_an_unstorable_token_expiry_is_a_422_naming_it(client, user, value):
    client.force_login(user)
    response = client.post(
        "/api/tokens", {"name": "t", "expires_at": value}, content_type="application/json"
    )
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["loc"][-1] == "expires_at"


def test_a_token_expiry_without_a_time_zone_is_in_the_sites(client, user):
    client.force_login(user)
    past = client.post(
        "/api/tokens", {"name": "t", "expires_at": "0123-01-01"}, content_type="application/json"
    )
    assert past.status_code == 400 and past.json()["detail"].startswith("expires_at:")
    future = client.post(
        "/api/tokens", {"name": "t", "expires_at": "2999-01-01"}, content_type="application/json"
    )
    assert future.status_code == 201
    assert future.json()["expires_at"].startswith("2999-01-01T00:00:00")


def test_the_widest_offsets_postgresql_takes_are_accepted(client, user):
    client.force_login(user)
    for value in ("2024-01-01T00:00:00+15:59", "2024-01-01T00:00:00-15:59", "0123-06-01T00:00:00Z"):
        assert client.get("/api/chats/changes/audit", {"since": value}).status_code == 200
