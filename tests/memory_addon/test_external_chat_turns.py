"""A turn through the REST API names which chat of a binding it belongs to (H4, M10)."""

from __future__ import annotations

import json

import pytest

from memory_addon.models import Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_channel_scope

pytestmark = pytest.mark.django_db


def _note(user, binding, chat_key: str, text: str) -> None:
    file_write(
        user=user,
        scope=ensure_channel_scope(binding, chat_key),
        path="index.md",
        content=f"- {text}\n",
        base_sha256="",
    )


def test_a_turn_for_one_chat_of_a_binding_reads_that_chats_notes_only(api, user, binding):
    _note(user, binding, "", "first: from before chats")
    _note(user, binding, "-1001", "family: has a cat")
    _note(user, binding, "-1001\n7", "topic: trips")
    turn = {"binding_id": binding.pk, "chat_id": "-1001"}
    block = api.post("/api/memory/turn-context", turn).json()["block"]
    assert "has a cat" in block
    assert "trips" not in block and "from before chats" not in block
    threaded = api.post("/api/memory/turn-context", {**turn, "thread_id": "7"}).json()["block"]
    assert "trips" in threaded and "has a cat" not in threaded
    plain = api.post("/api/memory/turn-context", {"binding_id": binding.pk}).json()["block"]
    assert "from before chats" in plain and "has a cat" not in plain


def test_a_proposal_from_a_tool_call_for_a_chat_lands_in_that_chats_notes(api, user, binding):
    arguments = {"scope": "conversation", "action": "add", "text": "- work: ships Fridays"}
    response = api.post(
        "/api/memory/tools/call",
        {
            "turn": {"binding_id": binding.pk, "chat_id": "C1", "thread_id": "1.1"},
            "name": "propose_change",
            "arguments": arguments,
        },
    )
    assert response.status_code == 200, response.content
    assert json.dumps(response.json())
    proposal = Proposal.objects.get(user=user)
    assert proposal.scope == ensure_channel_scope(binding, "C1\n1.1")


@pytest.mark.parametrize(
    ("turn", "field"),
    [
        ({"chat_id": "a\nb"}, "chat_id"),
        ({"chat_id": "a" * 201}, "chat_id"),
        ({"thread_id": "t"}, "thread_id"),
        ({"chat_id": "a", "thread_id": "t\x1b"}, "thread_id"),
    ],
)
def test_a_bad_chat_or_thread_in_a_turn_is_a_422_naming_it(api, binding, turn, field):
    response = api.post("/api/memory/turn-context", {"binding_id": binding.pk, **turn})
    assert response.status_code == 422
    assert field in json.dumps(response.json())
