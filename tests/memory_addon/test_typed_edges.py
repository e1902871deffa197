"""Typed edges (issue 11): the typed shapes keep the API's answers and document them."""

from __future__ import annotations

import json

import pytest

from memory_addon.models import ChangeSet, Proposal
from memory_addon.services.proposals import memory_change_request
from memory_addon.turns import Turn, run_kind_of

pytestmark = pytest.mark.django_db


def test_a_proposals_operation_is_shown_with_exactly_the_keys_it_was_stored_with(api, user):
    proposal = memory_change_request(
        turn=Turn(user=user), operation={"action": "add", "text": "- tea: likes tea -> tea.md"}
    ).proposal
    stored = Proposal.objects.get(pk=proposal.pk).operations

    (listed,) = api.get("/api/memory/proposals").json()

    assert listed["operation"] == stored
    assert set(stored) == {"action", "scope", "text", "entry_id", "created"}


def test_a_waiting_revert_is_shown_with_its_change_id(api, user):
    from memory_addon.services.changes import file_write
    from memory_addon.services.scopes import ensure_user_scope

    change = file_write(
        user=user, scope=ensure_user_scope(user), path="a.md", content="x\n", base_sha256=""
    )
    ChangeSet.objects.filter(pk=change.pk).update(origin=ChangeSet.Origin.ASSISTANT)
    response = api.post(
        "/api/memory/tools/call",
        {"turn": {}, "name": "revert_change", "arguments": {"change_id": change.pk}},
    )
    assert response.json()["ok"] is True, response.json()

    (listed,) = api.get("/api/memory/proposals").json()

    assert listed["operation"]["action"] == "revert"
    assert listed["operation"]["change_id"] == change.pk


def test_openapi_lists_the_fields_of_a_proposal_operation_and_a_review_row(client):
    schemas = client.get("/api/openapi.json").json()["components"]["schemas"]

    operation = schemas["ProposalOut"]["properties"]["operation"]
    assert operation == {"$ref": "#/components/schemas/Operation"}
    assert {"action", "text", "entry_id", "topic", "topic_content", "change_id"} <= set(
        schemas["Operation"]["properties"]
    )
    assert schemas["Operation"]["required"] == ["action", "created"]
    review = schemas["JobOut"]["properties"]["review"]["items"]
    assert review == {"$ref": "#/components/schemas/ReviewRow"}
    assert {"path", "status", "size", "reason"} <= set(schemas["ReviewRow"]["properties"])


@pytest.mark.parametrize("change_id", ["[1]", "1e999", '"seven"'])
def test_a_change_id_that_is_no_number_is_a_refusal_not_a_server_error(api, change_id):
    response = api.post(
        "/api/memory/tools/call",
        {"turn": {}, "name": "revert_change", "arguments": f'{{"change_id": {change_id}}}'},
    )

    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is False
    assert "'change_id' must be a whole number" in answer["output"]


def test_an_insert_line_too_large_for_a_number_is_a_refusal(api, user):
    from memory_addon.services.changes import file_write
    from memory_addon.services.scopes import ensure_user_scope

    file_write(user=user, scope=ensure_user_scope(user), path="a.md", content="x\n", base_sha256="")
    response = api.post(
        "/api/memory/memory-tool",
        {
            "input": json.loads(
                '{"command": "insert", "path": "/memories/a.md", "insert_text": "y",'
                ' "insert_line": [2]}'
            )
        },
    )

    assert response.status_code == 200
    assert response.json()["ok"] is False
    assert "'insert_line' must be a whole number, not a list" in response.json()["output"]


def test_an_unknown_stored_run_kind_counts_as_background_and_may_not_save(user):
    assert run_kind_of("interactive") == "interactive"
    assert run_kind_of("scheduled") == "scheduled"
    assert run_kind_of("nightly") == "background"
    assert Turn(user=user, run_kind=run_kind_of("nightly")).is_background


def test_a_turn_from_a_messaging_binding_is_a_bridge_source(user, binding):
    assert Turn(user=user).source == ChangeSet.Source.CHAT
    assert Turn(user=user, binding=binding).source == ChangeSet.Source.BRIDGE
