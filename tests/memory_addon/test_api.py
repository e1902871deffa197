"""Ownership, tokens, settings and the OpenAPI schema of the memory API."""

from __future__ import annotations

import pytest

from memory_addon.models import ChangeSet
from memory_addon.services.changes import file_write
from memory_addon.services.proposals import memory_change_request
from memory_addon.services.scopes import ensure_user_scope
from memory_addon.turns import Turn
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def stranger_objects():
    stranger = UserFactory()
    scope = ensure_user_scope(stranger)
    change = file_write(user=stranger, scope=scope, path="a.md", content="theirs\n", base_sha256="")
    proposal = memory_change_request(
        turn=Turn(user=stranger), operation={"action": "add", "text": "- x: y -> x.md"}
    ).proposal
    return scope, change, proposal


def test_another_users_ids_are_404(api, stranger_objects):
    scope, change, proposal = stranger_objects
    version = change.changes.get()
    for response in (
        api.get(f"/api/memory/scopes/{scope.pk}/files"),
        api.get(f"/api/memory/scopes/{scope.pk}/file?path=a.md"),
        api.put(f"/api/memory/scopes/{scope.pk}/file?path=a.md", {"content": "mine"}),
        api.delete(f"/api/memory/scopes/{scope.pk}/file?path=a.md"),
        api.get(f"/api/memory/scopes/{scope.pk}/history"),
        api.post(f"/api/memory/versions/{version.pk}/restore"),
        api.get(f"/api/memory/change-sets/{change.pk}"),
        api.post(f"/api/memory/change-sets/{change.pk}/undo"),
        api.post(f"/api/memory/proposals/{proposal.pk}/confirm"),
        api.post(f"/api/memory/proposals/{proposal.pk}/reject"),
    ):
        assert response.status_code == 404, response.request
    assert ChangeSet.objects.count() == 1


def test_another_users_agent_in_a_turn_is_404(api):
    from tests.factories import AgentFactory

    foreign_agent = AgentFactory()
    response = api.post("/api/memory/turn-context", {"agent_id": foreign_agent.pk})
    assert response.status_code == 404


def test_proposals_api_lists_confirms_with_edit_and_shows_a_diff(api, user):
    proposal = memory_change_request(
        turn=Turn(user=user),
        operation={"action": "add", "text": "- tea: likes tea -> tea.md"},
        reason="asked",
    ).proposal
    listed = api.get("/api/memory/proposals").json()
    assert [p["id"] for p in listed] == [proposal.pk]
    assert "+- tea: likes tea -> tea.md" in listed[0]["diffs"][0]["diff"]
    confirmed = api.post(
        f"/api/memory/proposals/{proposal.pk}/confirm", {"text": "- tea: loves green tea -> tea.md"}
    )
    assert confirmed.status_code == 200
    detail = api.get(f"/api/memory/change-sets/{confirmed.json()['id']}").json()
    assert "loves green tea" in detail["changes"][0]["diff"]
    again = api.post(f"/api/memory/proposals/{proposal.pk}/confirm")
    assert again.status_code == 409


def test_save_mode_setting_round_trip_and_validation(api):
    assert api.get("/api/addons/memory/settings/save-mode").json()["value"] == "ask"
    assert (
        api.put("/api/addons/memory/settings/save-mode", {"value": "auto"}).json()["value"]
        == "auto"
    )
    bad = api.put("/api/addons/memory/settings/save-mode", {"value": "sometimes"})
    assert bad.status_code == 400 and "ask, auto, never" in bad.json()["detail"]
    assert api.get("/api/addons/memory/settings/save-mode").json()["value"] == "auto"
    assert api.get("/api/addons/memory/settings/unknown").status_code == 404


def test_personal_token_is_shown_once_hashed_at_rest_and_revocable(api, client):
    from accounts.models import ApiToken

    created = api.post("/api/tokens", {"name": "cli"})
    token = created.json()["token"]
    assert created.status_code == 201 and token.startswith("mh_")
    assert token not in ApiToken.objects.get().token_hash
    assert token not in api.get("/api/tokens").content.decode()
    client.logout()
    authorized = client.get("/api/memory/scopes", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert authorized.status_code == 200
    token_id = created.json()["id"]
    from django.test import Client

    owner = Client()
    owner.force_login(ApiToken.objects.get().user)
    assert owner.delete(f"/api/tokens/{token_id}").status_code == 204
    assert client.get("/api/memory/scopes", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401


def test_session_api_writes_need_the_csrf_token(user):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(user)
    response = strict.put(
        f"/api/memory/scopes/{ensure_user_scope(user).pk}/file?path=a.md",
        data='{"content": "x"}',
        content_type="application/json",
    )
    assert response.status_code == 403


def test_openapi_schema_is_valid_and_documents_the_endpoints(client):
    from openapi_spec_validator import validate

    schema = client.get("/api/openapi.json").json()
    validate(schema)
    paths = schema["paths"]
    for path in (
        "/api/memory/scopes/{scope_id}/file",
        "/api/memory/proposals/{proposal_id}/confirm",
        "/api/chats/changes/audit",
        "/api/addons/{addon}/settings/{key}",
        "/api/memory/tools/call",
    ):
        assert path in paths
    for operations in paths.values():
        for operation in operations.values():
            assert operation.get("summary"), operation


@pytest.mark.parametrize("url", ["/api/memory/turn-context", "/api/memory/tools/call"])
def test_a_turn_naming_another_persons_binding_or_agent_is_404(api, url):
    from accounts.services import messaging_binding_create
    from tests.factories import AgentFactory

    stranger = UserFactory()
    binding, _ = messaging_binding_create(owner=stranger, bridge="slack", external_id="C1")
    agent = AgentFactory(owner=stranger, memory_allowed=True, may_propose=True)
    for turn in ({"binding_id": binding.pk}, {"agent_id": agent.pk}):
        body = (
            turn
            if url.endswith("turn-context")
            else {"turn": turn, "name": "list_memory", "arguments": {"query": "x"}}
        )
        assert api.post(url, body).status_code == 404
