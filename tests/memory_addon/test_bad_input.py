"""Ordinary bad input is a 4xx or a form error, never a 500 (issue 10, item 19)."""

from __future__ import annotations

import pytest

from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


def test_a_non_numeric_scope_on_the_memory_page_is_a_404_not_a_500(client, user):
    client.force_login(user)
    response = client.get("/memory/?scope=abc")
    assert response.status_code == 404


def test_an_over_long_scope_number_on_the_memory_page_is_a_404(client, user):
    client.force_login(user)
    assert client.get("/memory/?scope=99999999999999999999999").status_code == 404


@pytest.mark.parametrize("offset", ["+25:00", "-24:30", "+99:99"])
def test_an_audit_offset_outside_24_hours_is_a_4xx(api, offset):
    response = api.client.get("/api/chats/changes/audit", {"since": f"2026-01-01T00:00:00{offset}"})
    assert 400 <= response.status_code < 500, response.content


def test_an_over_long_conversation_ref_is_a_4xx(api):
    response = api.post("/api/memory/turn-context", {"conversation_ref": "c" * 5000})
    assert response.status_code == 422


def test_an_over_long_project_key_in_a_tool_call_is_a_4xx(api):
    response = api.post(
        "/api/memory/tools/call",
        {"turn": {"project_key": "p" * 500}, "name": "memory_view", "arguments": {}},
    )
    assert response.status_code == 422


def test_an_over_long_project_name_is_a_4xx(api):
    response = api.post(
        "/api/memory/banks/enabled?enabled=true", {"project_key": "k", "project_name": "n" * 500}
    )
    assert response.status_code == 422


def test_an_over_long_project_key_in_the_bank_status_query_is_a_4xx(api):
    response = api.get("/api/memory/banks/status?project_key=" + "k" * 500)
    assert response.status_code == 422


def test_a_huge_agent_id_is_a_404(client, user):
    AgentFactory(owner=user)
    client.force_login(user)
    assert client.get("/memory/agents/99999999999999999999999/").status_code == 404


def test_a_huge_scope_id_in_the_api_is_a_404(api):
    assert api.get("/api/memory/scopes/99999999999999999999999/files").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/api/memory/proposals/1/confirm",
        "/api/tokens",
        "/api/memory/turn-context",
        "/api/memory/tools/call",
        "/api/memory/memory-tool",
    ],
)
def test_a_form_post_to_a_json_endpoint_is_a_415(client, user, path):
    client.force_login(user)
    response = client.post(path, {"text": "edited", "name": "t"})  # multipart, not JSON
    assert response.status_code == 415, response.content
    assert "application/json" in response.json()["detail"]
