"""A bridge turn's proposal that contradicts a saved note is flagged like any other (M23):
the one place every proposal is made marks it."""

from __future__ import annotations

import json

import pytest

from bridges.models import InboundMessage
from memory_addon.models import Proposal
from memory_addon.services.changes import file_write
from memory_addon.services.scopes import ensure_user_scope
from scripts.sample_bridge import send_message

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_bridge_proposal_that_contradicts_a_saved_note_is_flagged(
    fake_openai, webhook_url, bound, person, work
):
    scope = ensure_user_scope(person)
    file_write(user=person, scope=scope, path="index.md", content="Editor: Vim\n", base_sha256="")
    add = json.dumps({"action": "add", "scope": "user", "text": "Editor: Emacs"})
    fake_openai.chat_replies += [
        {"tool_calls": [{"id": "c1", "name": "propose_change", "arguments": add}]},
        {"content": "Noted."},
    ]
    assert send_message(webhook_url, bound[1], "I use Emacs now").status_code == 202
    (row,) = work()
    assert row.state == InboundMessage.State.ANSWERED
    proposal = Proposal.objects.get(user=person, source="bridge")
    assert proposal.conflict["kind"] == "topic" and proposal.conflict["text"] == "Editor: Vim"
